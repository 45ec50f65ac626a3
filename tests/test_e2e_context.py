"""injected-context on real Claude Code 2.1.332, headless and offline against the scripted fake API.

Both deliveries: the settings hooks (`memory-gate inject UserPromptSubmit` and `SessionStart`,
as an owner puts them in settings.json) and the plugin mods/injected-context, whose mod adds the
rules to prompt.submit's context. The classifier is a fake chat endpoint that says yes when the
rule's description and the request share a topic, or, for the mod, Claude Code's own model
answered by the fake API. What is checked is what the model's requests hold.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from claude_harness import Sandbox, needs_claude
from fake_anthropic import content_blocks, request_text
from fake_chat import FakeChat

pytestmark = needs_claude()

REPO = Path(__file__).resolve().parent.parent
PLUGIN = REPO / "mods" / "injected-context"
BIN = str(Path(sys.executable).parent)

MIGRATIONS = "RULE-MIGRATIONS-7731: every migration has a down step and runs without locking the table."
CSS = "RULE-CSS-5190: colours come from the design tokens, never hex values."

SETTINGS = {
    "hooks": {
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "memory-gate inject UserPromptSubmit", "timeout": 30}]}],
        "SessionStart": [{"matcher": "compact|clear", "hooks": [
            {"type": "command", "command": "memory-gate inject SessionStart", "timeout": 10}]}],
    }
}


def topical(question: str) -> float:
    description = question.split("\n", 1)[0].lower()
    request = question.split("request now:\n", 1)[1].split("\n", 1)[0].lower()
    return 0.95 if any(word in description and word in request for word in ("migration", "css")) else 0.02


class Injected:
    def __init__(self, box: Sandbox, delivery: str, chat: FakeChat | None = None, **env: str):
        self.box, self.delivery = box, delivery
        rules = box.project / ".claude" / "context"
        rules.mkdir(parents=True)
        (rules / "migrations.md").write_text(
            f"---\ndescription: Writing or changing database migrations.\n---\n{MIGRATIONS}\n")
        user = box.home / ".claude" / "hooks" / "context"
        user.mkdir(parents=True)
        (user / "css.md").write_text(f"---\ndescription: Styling the web front end with CSS.\n---\n{CSS}\n")
        self.env = {"PATH": BIN + os.pathsep + os.environ.get("PATH", ""), **env}
        if chat is not None:
            self.env.update(MEMORY_GATE_CONTEXT_CLASSIFIER="chat", MEMORY_GATE_CONTEXT_CHAT_URL=chat.url)

    def options(self) -> dict:
        if self.delivery == "mod":
            return {"plugin_dirs": [PLUGIN]}
        if self.delivery == "both":
            return {"plugin_dirs": [PLUGIN], "settings": SETTINGS}
        return {"settings": SETTINGS}

    def session(self):
        return self.box.session(env=self.env, debug=True, **self.options())

    def run(self, prompt: str):
        run = self.box.run(prompt, env=self.env, debug=True, **self.options())
        assert run.returncode == 0 and run.load_errors() == [], run.explain()
        return run


def turn_request(turn) -> dict:
    """The first main-loop request of a turn: the one its prompt (and its rules) went out in."""
    return turn.requests[0]


def where(body: dict, text: str) -> list[int]:
    """Indexes of the messages whose text holds `text`."""
    return [at for at, message in enumerate(body["messages"])
            if any(text in (block.get("text") or "") for block in content_blocks(message))]


def assert_with_or_after_the_prompt(body: dict, prompt: str, marker: str) -> None:
    [prompt_at] = [at for at in where(body, prompt) if body["messages"][at]["role"] == "user"][-1:]
    assert where(body, marker) and min(where(body, marker)) >= prompt_at


@pytest.fixture
def chat():
    fake = FakeChat(p_yes=topical)
    yield fake
    fake.close()


@pytest.mark.parametrize("delivery", ["settings", "mod"])
def test_rules_reach_the_model_once_per_session_and_again_after_compaction(tmp_path, chat, delivery):
    with Sandbox(tmp_path) as box:
        injected = Injected(box, delivery, chat)
        with injected.session() as session:
            unrelated = session.send("Explain what this regular expression does.")
            first = session.send("Add a migration for the orders table.")
            second = session.send("Now another migration, for invoices.")
            third = session.send("Explain what this regular expression does.")
            session.compact()
            after = session.send("Write a migration for the customers table.")
        assert box.fake.errors == []
    assert all(turn.result and not turn.result.get("is_error") for turn in (unrelated, first, second, third, after))
    assert session.debug_file and "failed to load" not in session.debug_file.read_text(errors="replace")
    assert MIGRATIONS[:20] not in request_text(turn_request(unrelated))  # never for an unrelated request
    body = turn_request(first)
    assert request_text(body).count(MIGRATIONS) == 1
    assert_with_or_after_the_prompt(body, "Add a migration for the orders table.", MIGRATIONS)
    if delivery == "mod":  # prompt.submit's context: the same user message as the prompt
        [at] = where(body, MIGRATIONS)
        assert "Add a migration for the orders table." in request_text({"messages": [body["messages"][at]]})
    assert "description:" not in request_text(body)  # the body only
    for turn in (second, third):  # once per session: only the first injection, in the history
        assert request_text(turn_request(turn)).count(MIGRATIONS) == 1
    body = turn_request(after)  # compaction replaced the history; the rule is injected anew
    assert request_text(body).count(MIGRATIONS) == 1
    assert_with_or_after_the_prompt(body, "Write a migration for the customers table.", MIGRATIONS)
    assert all(CSS[:14] not in request_text(request) for request in box.fake.main_requests)


def test_with_both_deliveries_installed_a_rule_goes_in_once(tmp_path, chat):
    with Sandbox(tmp_path) as box:
        injected = Injected(box, "both", chat)
        run = injected.run("Add a migration for the orders table.")
        assert box.fake.errors == []
    body = turn_request(run)
    assert request_text(body).count(MIGRATIONS) == 1
    [at] = where(body, MIGRATIONS)
    assert body["messages"][at]["role"] == "user"  # the mod's delivery, not the settings hook's
    assert len([q for q in chat.questions() if "orders table" in q]) == 2  # each rule weighed once


def answer_classify(body: dict) -> str:
    """Claude Code's small model, as the fake plays it: applies when the rule's description and
    the request now share a topic."""
    text = body["messages"][-1]["content"]
    if isinstance(text, list):
        text = "".join(block.get("text", "") for block in text)
    quoted = text.split("<text>", 1)[-1].split("</text>", 1)[0]  # Claude Code quotes each line with "> "
    lines = [line[2:] if line.startswith("> ") else line.lstrip(">") for line in quoted.strip("\n").split("\n")]
    question = "\n".join(lines[lines.index(next(l for l in lines if l.startswith("Rule description:"))):])
    return "applies" if topical(question) > 0.5 else "unrelated"


def test_the_mod_asks_claude_codes_own_model(tmp_path):
    with Sandbox(tmp_path) as box:
        box.fake.side_reply = answer_classify
        injected = Injected(box, "mod", MEMORY_GATE_CONTEXT_CLASSIFIER="claude")
        with injected.session() as session:
            first = session.send("Add a migration for the orders table.")
            second = session.send("Make the header CSS use the brand colours.")
        assert box.fake.errors == []
    side = box.fake.side_requests
    assert len(side) == 3  # two rules weighed for the first prompt, the one left for the second
    assert all(body["model"].startswith("claude-haiku") and "tools" not in body for body in side)
    assert all(MIGRATIONS[:20] not in request_text(body) and "migrations.md" not in request_text(body) for body in side)
    assert request_text(turn_request(first)).count(MIGRATIONS) == 1 and CSS[:14] not in request_text(turn_request(first))
    assert request_text(turn_request(second)).count(CSS) == 1


@pytest.mark.parametrize("delivery", ["settings", "mod"])
def test_a_classifier_that_is_down_leaves_the_rules_to_words_with_a_notice(tmp_path, down_url, delivery):
    with Sandbox(tmp_path) as box:
        injected = Injected(box, delivery, MEMORY_GATE_CONTEXT_CLASSIFIER="chat",
                            MEMORY_GATE_CONTEXT_CHAT_URL=down_url.replace("embeddings", "chat/completions"))
        run = injected.run("Add a migration for the orders table.")
    body = turn_request(run)
    assert request_text(body).count(MIGRATIONS) == 1 and CSS[:14] not in request_text(body)
    notice = "injected-context: the chat classifier did not answer (chat endpoint unreachable"
    shown = run.ui_logs("injected-context") if delivery == "mod" else [run.stdout + run.debug_log()]
    assert any(notice in line and "2 rule files weighed by words instead, 1 injected" in line for line in shown), \
        run.stdout[-3000:]
    log = box.home / ".claude" / "hooks" / "context" / "injected-context.log"
    assert "classifier=chat did not answer" in log.read_text()


def test_memory_gate_missing_from_path_lets_the_prompt_through(tmp_path, chat):
    with Sandbox(tmp_path) as box:
        injected = Injected(box, "mod", chat)
        injected.env["PATH"] = "/usr/bin:/bin"
        run = injected.run("Add a migration for the orders table.")
    assert run.result_text and MIGRATIONS not in request_text(turn_request(run))
    # The plugin's launcher finds no memory-gate and says so on screen, with the mend.
    shown = run.ui_logs("injected-context")
    assert any("injected-context is off" in line and "scripts/install" in line for line in shown), shown


def test_the_plugin_validates(tmp_path):
    import subprocess

    with Sandbox(tmp_path) as box:
        result = subprocess.run([box.claude, "plugin", "validate", str(PLUGIN)], env=box.env(), capture_output=True,
                                text=True, timeout=60)
    assert result.returncode == 0 and "Validation passed" in result.stdout, result.stdout + result.stderr


# -- the claude classifier: the question, the answer, time-outs, refusals --------------------------


def classify_question(body: dict) -> str:
    """The text of a $.model.classify request, as the small model reads it."""
    return request_text(body)


def test_the_claude_question_holds_the_description_and_the_request_and_nothing_else(tmp_path):
    with Sandbox(tmp_path) as box:
        box.fake.side_reply = answer_classify
        injected = Injected(box, "mod", MEMORY_GATE_CONTEXT_CLASSIFIER="claude")
        run = injected.run("Add a migration for the orders table.")
        assert box.fake.errors == []
    side = box.fake.side_requests
    assert len(side) == 2
    for body in side:
        text = classify_question(body)
        assert "Add a migration for the orders table." in text
        assert '"applies"' in text and '"unrelated"' in text  # the labels the answer is read by
        assert MIGRATIONS[:20] not in text and CSS[:14] not in text and ".md" not in text
        assert body.get("stream") is not True and "tools" not in body
    descriptions = sorted("migrations" if "database migrations" in classify_question(b) else "css" for b in side)
    assert descriptions == ["css", "migrations"]
    assert request_text(turn_request(run)).count(MIGRATIONS) == 1 and CSS[:14] not in request_text(turn_request(run))
    assert not run.ui_logs("injected-context")  # both answered: no notice


@pytest.mark.parametrize(("spelled", "read"), [
    ("Applies", True), ("applies.", True), (" applies\n", True), ("It applies, I think.", True), ("maybe", None),
])
def test_the_answer_is_read_by_its_label(tmp_path, spelled, read):
    """Claude Code reads the label out of its model's answer whatever its case, punctuation or
    words around it; an answer naming neither label leaves the rule to words, with a notice."""
    with Sandbox(tmp_path) as box:
        box.fake.side_reply = lambda body: spelled if "database migrations" in request_text(body) else "unrelated"
        injected = Injected(box, "mod", MEMORY_GATE_CONTEXT_CLASSIFIER="claude")
        run = injected.run("Explain what this regular expression does.")
    body = turn_request(run)
    shown = run.ui_logs("injected-context")
    if read:
        assert request_text(body).count(MIGRATIONS) == 1 and shown == []
    else:  # by words, a regular expression is no migration
        assert MIGRATIONS[:20] not in request_text(body)
        assert any("(Claude Code's model named no label); 1 rule file weighed by words instead, 0 injected" in line
                   for line in shown), shown
    assert CSS[:14] not in request_text(body)


def test_a_model_that_does_not_answer_in_time_leaves_the_rules_to_words(tmp_path):
    import threading
    import time

    release, asked, answered_at = threading.Event(), [], []

    def stalled(body: dict):
        asked.append(time.monotonic())
        release.wait(60)  # the fake API holds the small model's answer until the turn's request comes
        return "applies"

    def main_request(body: dict):
        answered_at.append(time.monotonic())
        release.set()
        return "Done."

    with Sandbox(tmp_path) as box:
        box.fake.side_reply = stalled
        box.fake.add(main_request)
        injected = Injected(box, "mod", MEMORY_GATE_CONTEXT_CLASSIFIER="claude", MEMORY_GATE_CONTEXT_TIMEOUT="1")
        try:
            run = injected.run("Add a migration for the orders table.")
        finally:
            release.set()
    assert len(asked) == 2 and answered_at
    assert answered_at[0] - max(asked) < 15  # the prompt went on after the time-out, not after the model
    body = turn_request(run)
    assert request_text(body).count(MIGRATIONS) == 1 and CSS[:14] not in request_text(body)  # words decided
    shown = run.ui_logs("injected-context")
    assert any("the claude classifier did not answer (Claude Code's model did not answer within 1 s)" in line
               and "2 rule files weighed by words instead, 1 injected" in line for line in shown), shown


def test_a_refusal_leaves_the_rules_to_words(tmp_path):
    from fake_anthropic import reply

    with Sandbox(tmp_path) as box:
        box.fake.side_reply = lambda body: reply("I can't help with that request.", stop_reason="refusal")
        injected = Injected(box, "mod", MEMORY_GATE_CONTEXT_CLASSIFIER="claude")
        run = injected.run("Make the header CSS use the brand colours.")
    body = turn_request(run)
    assert request_text(body).count(CSS) == 1 and MIGRATIONS[:20] not in request_text(body)
    shown = run.ui_logs("injected-context")
    assert any("the claude classifier did not answer" in line and "weighed by words instead" in line
               for line in shown), shown
    log = box.home / ".claude" / "hooks" / "context" / "injected-context.log"
    assert "classifier=claude did not answer" in log.read_text()


def test_a_prompt_with_no_work_asks_claude_nothing(tmp_path):
    with Sandbox(tmp_path) as box:
        box.fake.side_reply = answer_classify
        injected = Injected(box, "mod", MEMORY_GATE_CONTEXT_CLASSIFIER="claude")
        with injected.session() as session:
            thanks = session.send("thanks, looks good")
            sim = session.send("sim")
        assert box.fake.errors == []
    assert box.fake.side_requests == []
    for turn in (thanks, sim):
        assert MIGRATIONS[:20] not in request_text(turn_request(turn)) and CSS[:14] not in request_text(turn_request(turn))
