"""`memory-gate inject EVENT` as Claude Code and the mod run it: a process, JSON on stdin.

Rules are injected once per session, again after compaction or /clear, never for an unrelated
request; a classifier that does not answer injects every pending rule with a notice and a log
line; the mod and a settings hook never both serve one prompt; and whatever breaks fails open.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import context_labels
import pytest
from conftest import child_env
from fake_chat import FakeChat
from loaded import loaded_by

from gate import config

MIGRATIONS = "---\ndescription: Writing or changing database migrations.\n---\nMIGRATIONS: always write the down step."
CSS = "---\ndescription: Styling the web front end with CSS.\n---\nCSS: use the design tokens."


class Project:
    def __init__(self, tmp_path: Path, **env: str):
        self.root = tmp_path
        self.home = tmp_path / "home"
        self.project = tmp_path / "project"
        self.user_rules = self.home / ".claude" / "hooks" / "context"
        self.project_rules = self.project / ".claude" / "context"
        self.project.mkdir(parents=True)
        self.env = {**child_env(tmp_path / "state"), "HOME": str(self.home), "CLAUDE_PROJECT_DIR": str(self.project), **env}
        self.prompts = 0

    def rule(self, name: str, text: str, *, user: bool = False) -> Path:
        folder = self.user_rules if user else self.project_rules
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
        return folder / name

    def run(self, event: str, payload: dict | str, **env: str) -> tuple[int, dict | None, str]:
        stdin = payload if isinstance(payload, str) else json.dumps({"cwd": str(self.project), **payload})
        result = subprocess.run(["memory-gate", "inject", event], input=stdin, capture_output=True, text=True,
                                env={**self.env, **env}, timeout=30)
        lines = result.stdout.strip().splitlines()
        assert len(lines) <= 1, result.stdout
        return result.returncode, json.loads(lines[0]) if lines else None, result.stderr

    def prompt(self, text: str, session: str = "s1", **env: str) -> dict | None:
        self.prompts += 1
        code, output, _ = self.run("UserPromptSubmit", {"session_id": session, "prompt_id": f"p{self.prompts}",
                                                         "prompt": text}, **env)
        assert code == 0
        return output

    def database(self) -> Path:
        return Path(config.database_for(self.root / "state", self.project))


def context_of(output: dict | None) -> str:
    return (output or {}).get("hookSpecificOutput", {}).get("additionalContext", "")


def topical(question: str) -> float:
    """A model that says yes when the rule's description and the request now share a topic."""
    description = question.split("\n", 1)[0].lower()
    request = question.split("request now:\n", 1)[1].split("\n", 1)[0].lower()
    shared = any(word in description and word in request for word in ("migration", "css"))
    return 0.9 if shared else 0.05


@pytest.fixture
def chat():
    fake = FakeChat(p_yes=topical)
    yield fake
    fake.close()


@pytest.fixture
def project(tmp_path, chat):
    box = Project(tmp_path, MEMORY_GATE_CONTEXT_CLASSIFIER="chat", MEMORY_GATE_CONTEXT_CHAT_URL=chat.url)
    box.rule("migrations.md", MIGRATIONS)
    box.rule("css.md", CSS, user=True)
    return box


def test_a_rule_that_applies_is_injected_once_per_session(project):
    assert context_of(project.prompt("What does this regex do?")) == ""
    first = context_of(project.prompt("Add a migration for the orders table."))
    assert "MIGRATIONS: always write the down step." in first and "description:" not in first
    assert "CSS" not in first
    assert project.prompt("Another migration, for invoices.") is None
    assert "MIGRATIONS" in context_of(project.prompt("A migration again.", session="s2"))


def test_compaction_and_clear_make_the_rules_injectable_again(project):
    assert "MIGRATIONS" in context_of(project.prompt("Write a migration."))
    for source in ("compact", "clear"):
        assert project.run("SessionStart", {"session_id": "s1", "source": source}) == (0, None, "")
        assert "MIGRATIONS" in context_of(project.prompt("Write a migration."))
        assert project.prompt("Write a migration.") is None
    assert project.run("SessionStart", {"session_id": "s1", "source": "resume"}) == (0, None, "")
    assert project.prompt("Write a migration.") is None


def test_the_classifier_gets_the_two_previous_requests_never_the_file(project, chat):
    for text in ("First request.", "Second request.", "Third request.", "Now the migration."):
        project.prompt(text)
    last = [q for q in chat.questions() if "Now the migration." in q]
    assert last and all("Second request." in q and "Third request." in q and "First request." not in q for q in last)
    everything = json.dumps(chat.requests)
    assert "MIGRATIONS:" not in everything and "migrations.md" not in everything and "css.md" not in everything


def test_a_classifier_that_does_not_answer_leaves_the_rules_to_words_with_a_notice(project, chat):
    chat.mode = "garbage"
    output = project.prompt("Add a migration for the orders table.")
    assert "MIGRATIONS" in context_of(output) and "CSS" not in context_of(output)
    notice = output["systemMessage"]
    assert notice.startswith("injected-context: the chat classifier did not answer") and "\n" not in notice
    assert "2 rule files weighed by words instead, 1 injected" in notice
    log = project.user_rules / "injected-context.log"
    [line] = log.read_text().splitlines()
    assert "session=s1 classifier=chat" in line and "injected: " in line and line.endswith("migrations.md")
    again = project.prompt("What does this regex do?")
    assert context_of(again) == "" and "1 rule file weighed by words instead, 0 injected" in again["systemMessage"]


def test_a_classifier_that_times_out_leaves_the_rules_to_words(tmp_path):
    slow = FakeChat(mode="slow")
    try:
        box = Project(tmp_path, MEMORY_GATE_CONTEXT_CLASSIFIER="chat", MEMORY_GATE_CONTEXT_CHAT_URL=slow.url,
                      MEMORY_GATE_CONTEXT_TIMEOUT="0.5")
        box.rule("migrations.md", MIGRATIONS)
        output = box.prompt("Write the migration for the new column")
    finally:
        slow.close()
    assert "MIGRATIONS" in context_of(output) and "did not answer in time" in output["systemMessage"]


def test_by_default_the_hybrid_classifier_weighs_the_rules_by_words(tmp_path):
    box = Project(tmp_path)
    box.rule("migrations.md", MIGRATIONS)
    box.rule("css.md", CSS, user=True)
    assert context_of(box.prompt("What does this regex do?")) == ""
    assert "MIGRATIONS" in context_of(box.prompt("Add a nullable column to the users table."))
    assert "CSS" in context_of(box.prompt("O rodapé fica desalinhado no celular, ajuste o layout."))


@pytest.mark.parametrize("prompt", ["thanks, looks good", "yes", "Sim, pode mandar.", "valeu!", "ok 👍"])
def test_a_prompt_with_no_work_injects_nothing_and_asks_no_classifier(project, chat, prompt):
    project.prompt("Explain what this regex does.")  # an earlier request: a follow-up could lean on it
    asked = len(chat.requests)
    chat.p_yes = 1.0
    assert project.prompt(prompt) is None
    assert len(chat.requests) == asked


# Prompts with no work in them, written for this test (none is in the labelled sets): thanks,
# approvals, greetings, the weather, sport, laughter, in both languages.
NO_WORK = [
    "thanks, that's exactly what I wanted", "yes!", "cool, thank you", "sweet", "love it", "good night",
    "have a nice weekend", "is it snowing in Denver?", "how hot will it be on Friday?", "did Brazil win yesterday?",
    "lol", "hahaha", "I'm going for lunch", "ok great", "alright, thanks",
    "obrigadão", "valeu demais", "perfeito!", "sim, isso", "boa!", "amei, obrigada", "boa noite", "bom fim de semana",
    "vai nevar?", "que calor hoje", "o Flamengo ganhou?", "rsrsrs", "kkk", "vou almoçar", "tá ótimo, valeu",
    "fechado então",
]


@pytest.mark.slow
def test_with_the_default_classifier_a_prompt_with_no_work_injects_nothing(tmp_path):
    """Through `memory-gate inject UserPromptSubmit` at the default settings (hybrid, by words),
    the labelled set's 25 rule files, and in each session a work request just before that a
    follow-up could lean on, with a rule on its subject still pending."""
    box = Project(tmp_path)
    for name, description in context_labels.load()["rules"].items():
        box.rule(f"{name}.md", f"---\ndescription: {description}\n---\nRULE {name.upper()}")
    given = {}
    for at, prompt in enumerate(NO_WORK):
        (box.project_rules / "zz.md").unlink(missing_ok=True)  # written after the work request, so still pending
        assert "RULE MIGRATIONS" in context_of(box.prompt("Add a nullable column last_seen_at to the users table.",
                                                          f"s{at}"))
        pending = box.rule("zz.md", f"---\ndescription: Writing or changing database migrations.\n---\nPENDING {at}")
        given[prompt] = context_of(box.prompt(prompt, f"s{at}"))
    assert {prompt: found for prompt, found in given.items() if found} == {}
    # ... while a follow-up that asks for something still leans on the earlier request
    assert pending.exists() and f"PENDING {len(NO_WORK) - 1}" in context_of(box.prompt("try again",
                                                                                      f"s{len(NO_WORK) - 1}"))


def test_with_no_classifier_nothing_is_injected_and_no_database_is_made(tmp_path):
    box = Project(tmp_path, MEMORY_GATE_CONTEXT_CLASSIFIER="none")
    box.rule("migrations.md", MIGRATIONS)
    assert box.prompt("Write a migration.") is None
    assert not box.database().exists()


def test_a_misconfigured_classifier_counts_as_not_answering(tmp_path):
    box = Project(tmp_path, MEMORY_GATE_CONTEXT_CLASSIFIER="embeddings")
    box.rule("migrations.md", MIGRATIONS)
    output = box.prompt("Change the schema of the orders table")
    assert "MIGRATIONS" in context_of(output) and "needs MEMORY_GATE_EMBED_URL" in output["systemMessage"]


def test_automated_prompts_are_not_weighed(project, chat):
    assert project.prompt("<task-notification>migration agent finished</task-notification>") is None
    assert chat.requests == []


def test_rules_over_the_limit_go_in_whole_or_by_path(project):
    for name in ("a", "b", "c"):
        project.rule(f"{name}-migrations.md", MIGRATIONS.replace("MIGRATIONS:", f"{name.upper()}:") + " x" * 2000)
    text = context_of(project.prompt("Write a migration."))
    assert len(text.encode("utf-16-le")) // 2 <= 10_000
    assert "too long to include here: read that file before you start." in text
    assert project.prompt("Write a migration.") is None  # the ones named by path count as given


# -- two deliveries ---------------------------------------------------------------------------------


def submit(project, text: str, session: str = "s1") -> dict:
    code, output, _ = project.run("Submit", {"session_id": session, "prompt": text})
    assert code == 0
    return output


def test_a_prompt_the_mod_served_is_left_alone_by_the_settings_hook(project, chat):
    served = submit(project, "Write a migration.")
    assert len(served["context"]) == 1 and "MIGRATIONS" in served["context"][0]
    asked = len(chat.requests)
    assert project.prompt("Write a migration.") is None  # the same prompt, inside the mod's next()
    assert len(chat.requests) == asked  # not weighed a second time
    chat.p_yes = 0.9
    assert "CSS" in context_of(project.prompt("Anything else for the header?"))  # a later prompt is the hook's


def test_two_settings_hooks_of_one_prompt_serve_it_once(project):
    payload = {"session_id": "s1", "prompt_id": "same", "prompt": "Write a migration."}
    first, second = project.run("UserPromptSubmit", payload), project.run("UserPromptSubmit", payload)
    assert "MIGRATIONS" in context_of(first[1]) and second[1] is None


def test_with_claude_as_classifier_the_mod_asks_and_answers(project):
    project.env["MEMORY_GATE_CONTEXT_CLASSIFIER"] = "claude"
    asked = submit(project, "Write a migration.")
    assert asked["context"] == [] and asked["ask"]["labels"] == ["applies", "unrelated"]
    assert asked["ask"]["model"] == "haiku"
    questions = {item["rule"]: item["text"] for item in asked["ask"]["rules"]}
    assert len(questions) == 2 and all("Write a migration." in text for text in questions.values())
    assert not any("MIGRATIONS:" in text or ".md" in text for text in questions.values())
    labels = {rule: ("applies" if "migrations" in rule else "unrelated") for rule in questions}
    code, answered, _ = project.run("Answered", {"session_id": "s1", "labels": labels})
    assert code == 0 and len(answered["context"]) == 1 and "MIGRATIONS" in answered["context"][0]
    assert "notice" not in answered
    again = submit(project, "Style it with CSS.")
    [(rule, _)] = [(item["rule"], item["text"]) for item in again["ask"]["rules"]]
    code, answered, _ = project.run("Answered", {"session_id": "s1", "labels": {rule: None},
                                                 "reason": "Claude Code's model failed: HTTP 500"})
    assert "CSS" in answered["context"][0] and "HTTP 500" in answered["notice"]  # by words: the prompt is on CSS
    assert "1 rule file weighed by words instead, 1 injected" in answered["notice"]


def test_with_claude_as_classifier_the_settings_hook_alone_weighs_by_words(project):
    project.env["MEMORY_GATE_CONTEXT_CLASSIFIER"] = "claude"
    output = project.prompt("Restyle the CSS of the header")
    assert "CSS" in context_of(output) and "MIGRATIONS" not in context_of(output)
    assert "runs only inside the injected-context mod" in output["systemMessage"]


def test_answers_for_files_that_are_not_rules_are_ignored(project, tmp_path):
    outside = tmp_path / "secret.md"
    outside.write_text("---\ndescription: x\n---\nSECRET")
    code, answered, _ = project.run("Answered", {"session_id": "s1", "labels": {str(outside): "applies"}})
    assert code == 0 and answered == {"context": []}


# -- failing open ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("event", "stdin", "says"),
    [
        ("UserPromptSubmit", "not json", "input is not JSON"),
        ("UserPromptSubmit", "[1, 2]", "not a JSON object"),
        ("UserPromptSubmit", "", "not a JSON object"),
        ("UserPromptSubmit", '{"prompt": "x"}', "no session_id"),
        ("UserPromptSubmit", '{"session_id": "s", "prompt": 3}', "no prompt"),
        ("Answered", '{"session_id": "s", "labels": []}', "no labels"),
        ("Bogus", "{}", "unknown hook event"),
        ("", "{}", "unknown hook event"),
    ],
)
def test_malformed_input_fails_open_with_one_warning(project, event, stdin, says):
    code, output, stderr = project.run(event, stdin)
    assert code == 0
    assert list(output) == ["systemMessage"] and output["systemMessage"].startswith("injected-context: ")
    assert says in output["systemMessage"] and "no rules injected" in output["systemMessage"]


def test_an_unusable_setting_fails_open(project):
    code, output, _ = project.run("UserPromptSubmit", {"session_id": "s", "prompt": "x"},
                                  MEMORY_GATE_CONTEXT_CLASSIFIER="gpt")
    assert code == 0 and "MEMORY_GATE_CONTEXT_CLASSIFIER='gpt' is not a classifier" in output["systemMessage"]


def test_a_corrupt_database_fails_open(project):
    project.database().parent.mkdir(parents=True)
    project.database().write_bytes(b"not a database" * 200)
    code, output, _ = project.run("UserPromptSubmit", {"session_id": "s", "prompt_id": "p", "prompt": "a migration"})
    assert code == 0 and "no rules injected" in output["systemMessage"]
    assert project.database().read_bytes().startswith(b"not a database")


def test_an_unwritable_rules_folder_still_gets_the_notice(project, chat):
    chat.mode = "error"
    project.user_rules.chmod(0o500)
    try:
        output = project.prompt("Write a migration")
    finally:
        project.user_rules.chmod(0o700)
    assert "MIGRATIONS" in context_of(output) and "did not answer" in output["systemMessage"]


@pytest.fixture(params=["chat", "hybrid"])
def any_classifier(request, project, fake_embeddings):
    if request.param == "hybrid":  # the default, with meaning
        project.env.pop("MEMORY_GATE_CONTEXT_CLASSIFIER")
        project.env["MEMORY_GATE_EMBED_URL"] = fake_embeddings.url
    return project


def test_the_per_prompt_path_imports_the_standard_library_and_apsw_only(any_classifier):
    """Every module the inject hook loads comes from the standard library, apsw or memory-gate
    (tests/loaded.py tells them apart by where each was loaded from)."""
    project = any_classifier
    payload = {"session_id": "s", "prompt_id": "p", "prompt": "a migration", "cwd": str(project.project)}
    result, by_source = loaded_by(["inject", "UserPromptSubmit"], payload, project.env)
    assert "MIGRATIONS" in result.stdout  # the classifier was asked: its imports are on the path too
    assert set(by_source) == {"stdlib", "apsw", "gate"}, by_source
