"""Secrets in records whose names stand in a header, away from the values: a CSV file's first line
and its rows (`provider,env,client_secret` then `auth0,prod,<secret>`), SQL's `INSERT INTO t (email, password)
VALUES ('...', '...')`, and a .netrc's `machine <host> login <user> password <secret>`. Each value is checked as an assignment to its column's
name (gate.credentials.shapes), so `password` takes a password and `api_key` a literal, while
`name` or `env` take anything. Plain string work in linear time, and no `re`: on the hooks' path.
"""

from gate.credentials.shapes import _check_assignment

# The longest line read as a CSV header, and the most columns: a header is short.
_HEADER_MAX, _COLUMNS_MAX = 400, 40
# The longest INSERT statement read, from INSERT to the closing parenthesis of its values.
_INSERT_MAX = 4000
_KIND = "a password or key assignment"


def _is_name(cell: str) -> bool:
    """A column's name: a word with `_`, `-` or `.` (`client_secret`, `hec-token`), no space."""
    return 0 < len(cell) <= 60 and cell[0].isalpha() and all(ch.isalnum() or ch in "_-." for ch in cell)


def _unquote(cell: str) -> tuple[str, int, bool]:
    """A cell's value without its spaces and quotes, the offset where the value starts in the cell,
    and whether it was quoted."""
    stripped = cell.strip()
    offset = cell.index(stripped) if stripped else 0
    if len(stripped) >= 2 and stripped[0] == stripped[-1] and stripped[0] in "\"'`":
        return stripped[1:-1], offset + 1, True
    return stripped, offset, False


def _secret_cells(names: list[str], cells: list[str], at: int):
    """(start, end, kind) of each cell whose column's name makes its value a secret; `at` is where
    the first cell starts in the text, and cells are separated by one character."""
    for name, cell in zip(names, cells, strict=False):
        value, offset, quoted = _unquote(cell)
        if value and _check_assignment("name", value, quoted, name):
            yield at + offset, at + offset + len(value), _KIND
        at += len(cell) + 1


def csv_hits(text: str):
    """Secrets in the rows under a CSV header: a line of two or more column names joined by
    commas, then lines with as many cells, with no space around a comma (code's `f(a, b)` and
    prose's lists have them)."""
    names: list[str] | None = None
    at = 0
    for line in text.splitlines(keepends=True):
        row = line.rstrip("\r\n")
        cells = row.split(",") if "," in row and len(row) <= _HEADER_MAX * 10 else []
        if any(cell != cell.strip() for cell in cells):
            cells = []
        if names and len(cells) == len(names):
            yield from _secret_cells(names, cells, at)
        elif 2 <= len(cells) <= _COLUMNS_MAX and len(row) <= _HEADER_MAX and all(_is_name(cell) for cell in cells):
            names = cells
        else:
            names = None
        at += len(line)


def _split_values(inside: str) -> list[str]:
    """The comma-separated items of a VALUES list, commas inside quotes kept."""
    items, item, quote = [], "", ""
    for ch in inside:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == ",":
            items.append(item)
            item = ""
            continue
        item += ch
    return [*items, item]


def insert_hits(text: str):
    """Secrets in `INSERT INTO t (a, b) VALUES (x, y)`: each value checked against its column."""
    low = text.lower()
    at = low.find("insert")
    while at >= 0:
        columns_start = low.find("(", at, at + 200)
        columns_end = low.find(")", columns_start, columns_start + 2000) if columns_start >= 0 else -1
        values = low.find("values", columns_end, columns_end + 20) if columns_end >= 0 else -1
        open_at = low.find("(", values, values + 20) if values >= 0 else -1
        if open_at >= 0 and low[columns_end + 1 : values].strip() == "":
            names = [name.strip().strip('`"[]') for name in text[columns_start + 1 : columns_end].split(",")]
            inside = _values_inside(text, open_at + 1)
            if all(_is_name(name) for name in names) and inside is not None:
                yield from _secret_cells(names, _split_values(inside), open_at + 1)
            # (on past what was read: a paste of `insert (a) values (` repeated costs linear time)
            at = max(at, open_at + (len(inside) if inside is not None else _INSERT_MAX))
        at = low.find("insert", at + 6)


def _values_inside(text: str, start: int) -> str | None:
    """The text of a VALUES list from `start` to its closing parenthesis (outside quotes)."""
    quote = ""
    for end in range(start, min(len(text), start + _INSERT_MAX)):
        ch = text[end]
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == ")":
            return text[start:end]
    return None


def netrc_hits(text: str):
    """The password of a .netrc entry: `password <secret>` after `machine <host>` (or `default`),
    on its line or the lines after."""
    machine = False
    at = 0
    for line in text.splitlines(keepends=True):
        words = line.split()
        if len(line) > _HEADER_MAX * 10:
            words = []
        if words[:1] in (["machine"], ["default"]):
            machine = True
        elif words[:1] not in (["login"], ["password"], ["account"], ["macdef"]):
            machine = False
        if machine:
            starts, pos = [], 0
            for word in words:
                pos = line.find(word, pos)
                starts.append(pos)
                pos += len(word)
            for index, word in enumerate(words[:-1]):
                if word == "password" and _check_assignment("name", words[index + 1], False, "password"):
                    start = at + starts[index + 1]
                    yield start, start + len(words[index + 1]), _KIND
        at += len(line)
