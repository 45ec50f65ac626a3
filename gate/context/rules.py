"""Rule files: Markdown whose frontmatter `description:` says which work its body governs.

Two folders hold them: the owner's, `<Claude Code's folder>/hooks/context/` (~/.claude, or
$CLAUDE_CONFIG_DIR), for every project, and the project's `.claude/context/`. Only `*.md` files
directly inside count. A project file overrides the owner's file of the same name, as project
settings override user settings in Claude Code. A rule is known by its path: that is what a
session records as given.

A file is skipped, with a reason for `memory-gate doctor`, when it has no description (the
classifier would have nothing to weigh), no body (nothing to inject), is not UTF-8 or is over
1 MiB. The frontmatter is read by a small parser of the YAML people write there (plain,
quoted and block scalars), since a YAML library is neither in the standard library nor cheap
to import on the per-prompt path.
"""

from __future__ import annotations

import os

MAX_BYTES = 1 << 20
# What the classifier reads of a description: enough for any one-line summary.
MAX_DESCRIPTION = 1000


class Rule:
    __slots__ = ("path", "description", "body")

    def __init__(self, path: str, description: str, body: str):
        self.path = path
        self.description = description
        self.body = body

    def __repr__(self) -> str:
        return f"Rule({self.path!r}, {self.description!r})"


class Skipped:
    __slots__ = ("path", "reason")

    def __init__(self, path: str, reason: str):
        self.path = path
        self.reason = reason

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


def folders(claude_dir: str, project_dir: str) -> list[str]:
    """Where rule files live, the owner's first: a project file of the same name wins."""
    return [os.path.join(claude_dir, "hooks", "context"), os.path.join(project_dir, ".claude", "context")]


def paths(places: list[str]) -> list[str]:
    """The rule files of `places`, in order of name; a later folder's file replaces an earlier
    folder's file of the same name. A missing folder has none."""
    chosen: dict[str, str] = {}
    for folder in places:
        try:
            entries = os.scandir(folder)
        except OSError:
            continue
        with entries:
            for entry in entries:
                name = entry.name
                if name.endswith(".md") and not name.startswith(".") and entry.is_file():
                    chosen[name] = entry.path
    return [chosen[name] for name in sorted(chosen)]


def read(path: str) -> Rule | Skipped:
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_BYTES + 1)
    except OSError as error:
        return Skipped(path, f"cannot be read ({error.strerror or type(error).__name__})")
    if len(raw) > MAX_BYTES:
        return Skipped(path, "is over 1 MiB: split it into rules of their own")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return Skipped(path, "is not UTF-8 text: save it as UTF-8")
    description, body = parse(text)
    if not description:
        return Skipped(
            path,
            "has no description: start it with a frontmatter block '---' / 'description: <the work "
            "it covers>' / '---', or it is never injected",
        )
    if not body:
        return Skipped(path, "has nothing after its frontmatter to inject")
    return Rule(path, description[:MAX_DESCRIPTION], body)


def load(places: list[str], leave_out: frozenset[str] | set[str] = frozenset()) -> tuple[list[Rule], list[Skipped]]:
    """Every readable rule of `places` except the paths in `leave_out` (already given: they are
    not even read), and the files skipped with why."""
    rules: list[Rule] = []
    skipped: list[Skipped] = []
    for path in paths(places):
        if path in leave_out:
            continue
        found = read(path)
        if isinstance(found, Rule):
            rules.append(found)
        else:
            skipped.append(found)
    return rules, skipped


# -- frontmatter ------------------------------------------------------------------------------


def parse(text: str) -> tuple[str | None, str]:
    """(description, body) of a rule file's text. Without a frontmatter block the description is
    None and the body is the whole text."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if not lines or lines[0].rstrip() != "---":
        return None, text.strip()
    for end in range(1, len(lines)):
        if lines[end].rstrip() in ("---", "..."):
            break
    else:
        return None, text.strip()
    body = "\n".join(lines[end + 1 :]).strip()
    return _description(lines[1:end]), body


def _description(lines: list[str]) -> str | None:
    for at, line in enumerate(lines):
        key, colon, value = line.partition(":")
        if not colon or line[:1].isspace() or key.strip().lower() != "description":
            continue
        following = []
        for more in lines[at + 1 :]:
            if more.strip() and not more[:1].isspace():
                break
            following.append(more)
        return _scalar(value.strip(), following) or None
    return None


def _scalar(value: str, following: list[str]) -> str:
    """A YAML scalar as one line of text: plain (continued on indented lines), 'single' or
    "double" quoted, or a block (| or >) on the indented lines below."""
    if value[:1] in ("|", ">"):
        return " ".join(line.strip() for line in following if line.strip())
    if value[:1] == '"':
        joined = " ".join([value] + [line.strip() for line in following if line.strip()])
        closing = _closing_quote(joined)
        inner = joined[1:closing] if closing > 0 else joined[1:]
        return " ".join(_unescape(inner).split())
    if value[:1] == "'":
        joined = " ".join([value] + [line.strip() for line in following if line.strip()])
        inner = joined[1:]
        closing = 0
        while True:
            closing = inner.find("'", closing)
            if closing < 0 or inner[closing + 1 : closing + 2] != "'":
                break
            closing += 2
        inner = inner[:closing] if closing >= 0 else inner
        return " ".join(inner.replace("''", "'").split())
    parts = [_uncomment(value)] + [_uncomment(line.strip()) for line in following if line.strip()]
    return " ".join(" ".join(part for part in parts if part).split())


def _closing_quote(text: str) -> int:
    at = 1
    while at < len(text):
        if text[at] == "\\":
            at += 2
            continue
        if text[at] == '"':
            return at
        at += 1
    return -1


_ESCAPES = {"n": " ", "t": " ", '"': '"', "\\": "\\", "/": "/"}


def _unescape(text: str) -> str:
    out, at = [], 0
    while at < len(text):
        char = text[at]
        if char == "\\" and at + 1 < len(text):
            out.append(_ESCAPES.get(text[at + 1], text[at + 1]))
            at += 2
            continue
        out.append(char)
        at += 1
    return "".join(out)


def _uncomment(text: str) -> str:
    """A plain scalar ends where ' #' starts a comment ('C#' keeps its sign)."""
    if text.startswith("#"):
        return ""
    at = text.find(" #")
    return (text[:at] if at >= 0 else text).strip()
