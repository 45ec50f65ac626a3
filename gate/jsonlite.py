"""JSON for the hooks, without importing the `json` package.

A hook is a process started on every turn, and `import json` costs it 6-9 ms on a 2-core
machine (json.decoder compiles regular expressions, which pulls in `re`, `enum` and more): a
third of a hook's whole run. CPython's own accelerator, `_json`, parses and quotes without any of
that. This module uses it for the small objects hooks read and write, and falls back to `json`
where `_json` is missing (other Pythons). Output is plain JSON either way; errors are ValueError
as with `json`.
"""

try:
    import _json

    _make_scanner = _json.make_scanner
    _quote = _json.encode_basestring_ascii
except (ImportError, AttributeError):  # pragma: no cover - not CPython
    _json = None  # type: ignore[assignment]  # no C scanner: loads falls back to json


def _constant(name: str) -> float:
    return {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}[name]


class _Context:
    """The attributes CPython's C scanner reads from a decoder."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = staticmethod(_constant)


_WHITESPACE = " \t\n\r"


def loads(text: str):
    if _json is None:  # pragma: no cover
        import json

        return json.loads(text)
    # The C scanner reads only the attributes _Context holds; the stub asks for a JSONDecoder.
    scan = _make_scanner(_Context())  # type: ignore[arg-type]
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        value, end = scan(text, start)
    except StopIteration as stop:
        raise ValueError(f"not JSON: expecting a value at character {stop.value}") from None
    except (SystemError, RecursionError) as error:
        # The C scanner reports some errors through json.decoder, which is not imported here.
        raise ValueError(f"not JSON ({type(error).__name__})") from None
    if text[end:].strip(_WHITESPACE):
        raise ValueError(f"not JSON: extra data at character {end}")
    return value


def dumps(value) -> str:
    if _json is None:  # pragma: no cover
        import json

        return json.dumps(value)
    return "".join(_encode(value))


def _encode(value):
    if value is None:
        yield "null"
    elif value is True:
        yield "true"
    elif value is False:
        yield "false"
    elif isinstance(value, str):
        yield _quote(value)
    elif isinstance(value, int):
        yield int.__repr__(value)
    elif isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError("JSON has no NaN or infinity")
        yield float.__repr__(value)
    elif isinstance(value, dict):
        yield "{"
        for index, (key, item) in enumerate(value.items()):
            if not isinstance(key, str):
                raise TypeError(f"JSON object keys must be strings, not {type(key).__name__}")
            yield (", " if index else "") + _quote(key) + ": "
            yield from _encode(item)
        yield "}"
    elif isinstance(value, (list, tuple)):
        yield "["
        for index, item in enumerate(value):
            if index:
                yield ", "
            yield from _encode(item)
        yield "]"
    else:
        raise TypeError(f"{type(value).__name__} is not JSON serializable")
