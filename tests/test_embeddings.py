"""The embeddings client: what it asks, what it accepts, and how each fault ends (a VectorError
in one line, well under a second)."""

import base64
import json
import math
import struct
import time

import pytest
from fake_embeddings import vector

from gate import config
from gate.search import embeddings
from gate.search.embeddings import DOCUMENT, QUERY, Endpoint, VectorError


def answer(*rows, model="m", order=None, key="embedding"):
    data = [{"index": index, key: row} for index, row in enumerate(rows)]
    return json.dumps({"data": [data[i] for i in order] if order else data, "model": model}).encode()


def test_a_request_asks_for_floats_and_says_query_or_document(fake_embeddings):
    endpoint = Endpoint(fake_embeddings.url, "bge-m3")
    endpoint.embed(["deploy"], role=QUERY, timeout=2)
    endpoint.embed(["a", "b"], role=DOCUMENT, timeout=2)
    first, second = fake_embeddings.requests
    assert first == {"input": ["deploy"], "model": "bge-m3", "encoding_format": "float", "input_type": "query"}
    assert second["input"] == ["a", "b"] and second["input_type"] == "document"


def test_results_are_matched_by_index_not_by_list_order(fake_embeddings):
    """The fake lists `data` in reverse order."""
    got = Endpoint(fake_embeddings.url, "m").embed(["deploy staging", "database reset"], role=DOCUMENT, timeout=2)
    expected = [embeddings.parse_answer(answer(vector(text, 64)), 1, "m").rows[0] for text in ("deploy staging", "database reset")]
    assert got.rows == expected and got.model == "fake-embed"


def test_vectors_come_back_unit_length():
    got = embeddings.parse_answer(answer([3, 4]), 1, "m")
    assert got.rows == [(0.6, 0.8)] and got.dimension == 2


def test_base64_is_accepted():
    packed = base64.b64encode(struct.pack("<2f", 3.0, 4.0)).decode()
    assert embeddings.parse_answer(answer(packed), 1, "m").rows[0] == pytest.approx((0.6, 0.8))


def test_the_answer_names_the_model_else_the_one_asked_for():
    assert embeddings.parse_answer(answer([1, 0], model="e5"), 1, "bge-m3").model == "e5"
    assert embeddings.parse_answer(json.dumps({"data": [{"index": 0, "embedding": [1, 0]}]}).encode(), 1, "bge-m3").model == "bge-m3"


@pytest.mark.parametrize(
    "payload, says",
    [
        (b"<html>", "other than JSON"),
        (json.dumps({"object": "list"}).encode(), "without a list"),
        (answer([1.0, 0.0]), "1 embeddings for 2 texts"),
        (answer([1.0, 0.0], [0.0, 1.0], order=[0, 0]), "repeated indexes"),
        (json.dumps({"data": [{"index": 5, "embedding": [1]}, {"index": 0, "embedding": [1]}]}).encode(), "wrong or repeated"),
        (answer([1.0, 0.0], [1.0]), "different lengths"),
        (answer([1.0, math.nan], [1.0, 0.0]), "NaN or infinity"),
        (answer([1.0, math.inf], [1.0, 0.0]), "NaN or infinity"),
        (answer([0.0, 0.0], [1.0, 0.0]), "all-zero"),
        (answer(["a", 1], [1.0, 0.0]), "not a list of numbers"),
        (answer([True, 1.0], [1.0, 0.0]), "not a list of numbers"),
        (answer([], [1.0, 0.0]), "not a list of numbers"),
        (answer("not base64!", [1.0, 0.0]), "neither numbers nor base64"),
        (answer(base64.b64encode(b"abc").decode(), [1.0, 0.0]), "not float32"),
    ],
)
def test_garbage_is_refused_with_a_reason(payload, says):
    with pytest.raises(VectorError, match=says):
        embeddings.parse_answer(payload, 2, "m")


@pytest.mark.parametrize(
    "mode, says",
    [
        ("error", "answered HTTP 500: model crashed"),
        ("garbage", "other than JSON"),
        ("nan", "NaN"),
    ],
)
def test_a_faulty_endpoint_is_a_vector_error(fake_embeddings, mode, says):
    fake_embeddings.mode = mode
    with pytest.raises(VectorError, match=says):
        Endpoint(fake_embeddings.url, "m").embed(["deploy"], role=QUERY, timeout=2)


def test_an_endpoint_that_is_down_fails_at_once(down_url):
    started = time.monotonic()
    with pytest.raises(VectorError, match="unreachable"):
        Endpoint(down_url, "m").embed(["deploy"], role=QUERY, timeout=2)
    assert time.monotonic() - started < 0.5


@pytest.mark.parametrize("mode", ["slow", "trickle"])
def test_a_slow_endpoint_costs_the_timeout_and_no_more(fake_embeddings, mode):
    """A server that trickles its answer keeps every socket read busy: only a deadline on the
    whole request stops it."""
    fake_embeddings.mode = mode
    endpoint = Endpoint(fake_embeddings.url, "m")
    started = time.monotonic()
    with pytest.raises(VectorError, match="did not answer within 0.2 s"):
        endpoint.embed(["deploy"], role=QUERY, timeout=0.2)
    assert time.monotonic() - started < 0.5


def test_after_two_timeouts_in_a_row_the_endpoint_is_left_alone_for_a_while(fake_embeddings):
    fake_embeddings.mode = "slow"
    endpoint = Endpoint(fake_embeddings.url, "m")
    for _ in range(2):
        with pytest.raises(VectorError):
            endpoint.embed(["a"], role=QUERY, timeout=0.1)
    fake_embeddings.mode = "ok"
    started = time.monotonic()
    with pytest.raises(VectorError, match="did not answer within 0.1 s"):
        endpoint.embed(["b"], role=QUERY, timeout=0.1)
    assert time.monotonic() - started < 0.05 and len(fake_embeddings.requests) == 2
    # Documents are another role: a search's slow queries do not silence the writes.
    assert endpoint.embed(["c"], role=DOCUMENT, timeout=2).dimension == 64


def test_one_timeout_costs_only_the_call_that_met_it(fake_embeddings):
    """A server still loading its model, or a burst of load, makes one answer late: the next
    call asks again, and an answer in between starts the count anew."""
    endpoint = Endpoint(fake_embeddings.url, "m")
    for _ in range(2):
        fake_embeddings.mode = "slow"
        with pytest.raises(VectorError, match="did not answer within 0.1 s"):
            endpoint.embed(["a"], role=QUERY, timeout=0.1)
        fake_embeddings.mode = "ok"
        assert endpoint.embed(["b"], role=QUERY, timeout=2).dimension == 64


def test_a_patient_endpoint_asks_again_after_a_timeout(fake_embeddings):
    fake_embeddings.mode = "slow"
    endpoint = Endpoint(fake_embeddings.url, "m", quiet_after_timeout=0.0)
    with pytest.raises(VectorError):
        endpoint.embed(["a"], role=QUERY, timeout=0.1)
    fake_embeddings.mode = "ok"
    assert endpoint.embed(["b"], role=QUERY, timeout=2).dimension == 64


def test_settings_make_the_endpoint():
    assert Endpoint.from_settings(config.load({})) is None
    settings = config.load({"MEMORY_GATE_EMBED_URL": "http://127.0.0.1:8080", "MEMORY_GATE_EMBED_MODEL": "e5",
                            "MEMORY_GATE_MAX_DISTANCE": "0.15"})
    endpoint = Endpoint.from_settings(settings)
    assert (endpoint.url, endpoint.model, endpoint.max_distance) == ("http://127.0.0.1:8080/v1/embeddings", "e5", 0.15)
