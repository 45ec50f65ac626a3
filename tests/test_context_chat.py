"""The chat classifier against a faithful fake chat-completions endpoint: yes, no, garbage,
time-out, and the ways servers answer (log-probabilities or words only)."""

from __future__ import annotations

import json
import time

import pytest
from fake_chat import FakeChat

from gate.context import chat, classify, rules

RULES = [
    rules.Rule("/r/migrations.md", "Writing database migrations.", "MIGRATIONS BODY"),
    rules.Rule("/r/css.md", "Styling the front end with CSS.", "CSS BODY"),
]


@pytest.fixture
def fake():
    server = FakeChat()
    yield server
    server.close()


def decide(fake, **kw):
    return classify.by_chat(fake.url, kw.pop("model", None), RULES, kw.pop("request", "Add a column to users."),
                            kw.pop("earlier", []), timeout=kw.pop("timeout", 2.0))


def test_yes_applies_and_no_does_not(fake):
    fake.p_yes = lambda question: 0.92 if "migrations" in question else 0.03
    decision = decide(fake)
    assert decision.failure is None
    assert [(v.rule.path, v.applies) for v in decision.verdicts] == [("/r/migrations.md", True), ("/r/css.md", False)]
    assert decision.verdicts[0].score == pytest.approx(0.92, abs=1e-6)  # from the log-probabilities


def test_the_line_is_half(fake):
    fake.p_yes = 0.5
    assert all(v.applies for v in decide(fake).verdicts)
    fake.p_yes = 0.49
    assert not any(v.applies for v in decide(fake).verdicts)


def test_a_server_without_logprobs_is_read_by_its_word(fake):
    fake.mode, fake.p_yes = "words", 0.7
    verdicts = decide(fake).verdicts
    assert [v.applies for v in verdicts] == [True, True] and verdicts[0].score == 1.0


def test_a_server_refusing_logprobs_is_asked_again_without(fake):
    fake.mode, fake.p_yes = "refuse-logprobs", 0.2
    decision = decide(fake)
    assert decision.failure is None and [v.applies for v in decision.verdicts] == [False, False]
    assert sorted(bool(body.get("logprobs")) for body in fake.requests) == [False, False, True, True]  # in parallel


@pytest.mark.parametrize(
    ("mode", "says"),
    [("garbage", "something other than a chat completion"), ("rambling", "neither yes nor no"),
     ("error", "HTTP 500: model crashed")],
)
def test_an_answer_it_cannot_read_leaves_the_rules_unanswered(fake, mode, says):
    fake.mode = mode
    decision = decide(fake)
    assert [v.applies for v in decision.verdicts] == [None, None]
    assert says in decision.failure


def test_a_server_that_does_not_answer_in_time(fake):
    fake.mode = "slow"
    started = time.monotonic()
    decision = decide(fake, timeout=0.4)
    assert time.monotonic() - started < 1.5
    assert [v.applies for v in decision.verdicts] == [None, None]
    assert "did not answer in time" in decision.failure


def test_a_server_that_is_down(down_url):
    decision = classify.by_chat(down_url.replace("embeddings", "chat/completions"), None, RULES, "x", [], timeout=1.0)
    assert [v.applies for v in decision.verdicts] == [None, None] and "unreachable" in decision.failure


def test_the_question_holds_the_description_and_the_requests_never_the_file(fake):
    fake.p_yes = 0.1
    decide(fake, model="qwen2.5:0.5b", request="Now the same for orders.",
           earlier=["Add a column to invoices.", "Looks good."])
    body = fake.requests[0]
    assert body["model"] == "qwen2.5:0.5b" and body["temperature"] == 0 and body["logprobs"] is True
    assert body["messages"][0] == {"role": "system", "content": classify.CHAT_SYSTEM}
    questions = "\n".join(fake.questions())
    for text in ("Writing database migrations.", "Now the same for orders.", "Add a column to invoices.", "Looks good."):
        assert text in questions
    for secret in ("migrations.md", "MIGRATIONS BODY", "CSS BODY", "/r/"):
        assert secret not in json.dumps(fake.requests)


def test_no_model_is_sent_unless_configured(fake):
    decide(fake)
    assert "model" not in fake.requests[0]


@pytest.mark.parametrize(
    ("content", "logprobs", "expected"),
    [
        ("Yes", None, 1.0),
        ("**No.**", None, 0.0),
        ("sim", None, 1.0),
        # a leading newline token, then the answer's alternatives
        ("Yes", {"content": [{"token": "\n", "logprob": -0.01, "top_logprobs": [{"token": "\n", "logprob": -0.01}]},
                             {"token": "Yes", "logprob": -0.4, "top_logprobs": [
                                 {"token": "Yes", "logprob": -0.4}, {"token": "No", "logprob": -1.1}]}]},
         pytest.approx(0.6682, abs=1e-3)),
        # no alternative spells yes or no: read the word
        ("No", {"content": [{"token": "No", "logprob": -0.1, "top_logprobs": [{"token": "Maybe", "logprob": -0.1}]}]}, 0.0),
    ],
)
def test_parse_answer(content, logprobs, expected):
    payload = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}, "logprobs": logprobs}]})
    assert chat.parse_answer(payload.encode()) == expected


@pytest.mark.parametrize("payload", [b"", b"[]", b'{"choices": []}', b'{"choices": ["x"]}', b'{"choices": [{}]}',
                                     b'{"choices": [{"message": {"content": null}}]}'])
def test_parse_answer_refuses_what_is_not_an_answer(payload):
    with pytest.raises(chat.ChatError):
        chat.parse_answer(payload)
