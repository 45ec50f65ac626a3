import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gate import jsonlite

values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(), children, max_size=5),
    max_leaves=20,
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(values)
def test_round_trips_like_json(value):
    assert jsonlite.loads(jsonlite.dumps(value)) == json.loads(json.dumps(value))
    assert jsonlite.loads(json.dumps(value)) == json.loads(json.dumps(value))
    assert json.loads(jsonlite.dumps(value)) == json.loads(json.dumps(value))


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=60))
def test_any_text_parses_as_json_does_or_is_a_value_error(text):
    try:
        expected = json.loads(text)
    except ValueError:
        with pytest.raises(ValueError):
            jsonlite.loads(text)
        return
    assert jsonlite.loads(text) == expected or expected != expected


@pytest.mark.parametrize("text", ["[1,2", '{"a": }', "", "  ", "[" * 100000, '{"a": 1} x'])
def test_malformed_json_is_a_value_error(text):
    with pytest.raises(ValueError):
        jsonlite.loads(text)


def test_what_cannot_be_json_is_refused():
    with pytest.raises(ValueError):
        jsonlite.dumps(float("nan"))
    with pytest.raises(TypeError):
        jsonlite.dumps({1: "a"})
    with pytest.raises(TypeError):
        jsonlite.dumps(object())
