"""The turn ledger: which turn searched, wrote and read what. The gate's whole state.

A turn is one owner prompt and everything the agent does for it. Hooks open turns (with Claude
Code's prompt_id and the owner's words) and map tool calls to them; the MCP server attributes
each call to a turn, records what its searches returned, and checks a write against it.

When no hook runs (a plain MCP client, or Claude Code without the hooks), the server opens turns
itself: a server turn lasts from one accepted write to the next, so even then a client cannot
write without answering for what it searched.

Functions here change rows but never begin or commit: the caller owns the transaction, so a
write and its ledger updates commit together.
"""

import apsw

from gate import clock

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: collections.abc costs a hook more than its whole query
    from collections.abc import Iterable

# This module is on the hooks' per-turn path: standard library modules that are cheap to
# import only (no dataclasses, namedtuple, datetime or pathlib; see bench/hooks.py).


class Turn:
    """One row of `turns`."""

    __slots__ = ("id", "session", "prompt_id", "prompt", "searched", "wrote", "holds", "outcome")

    def __init__(self, id, session, prompt_id, prompt, searched, wrote, holds, outcome):
        self.id, self.session, self.prompt_id, self.prompt = id, session, prompt_id, prompt
        self.searched, self.wrote, self.holds, self.outcome = searched, wrote, holds, outcome

    @property
    def opened_by_hook(self) -> bool:
        return self.prompt_id is not None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Turn) and all(getattr(self, n) == getattr(other, n) for n in self.__slots__)

    def __repr__(self) -> str:
        return "Turn(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__) + ")"


_TURN_COLUMNS = "id, session, prompt_id, prompt, searched, wrote, holds, outcome"


def _turn(conn: apsw.Connection, where: str, args: tuple) -> Turn | None:
    row = conn.execute(f"SELECT {_TURN_COLUMNS} FROM turns WHERE {where}", args).fetchone()
    return Turn(*row) if row else None


def get_turn(conn: apsw.Connection, turn_id: int) -> Turn | None:
    return _turn(conn, "id = ?", (turn_id,))


def ensure_session(conn: apsw.Connection, session: str) -> None:
    conn.execute("INSERT OR IGNORE INTO sessions (id, started) VALUES (?, ?)", (session, clock.now()))


def bump(conn: apsw.Connection, session: str) -> int:
    """Count one more event in the session; return the new count."""
    ensure_session(conn, session)
    return conn.execute("UPDATE sessions SET seq = seq + 1 WHERE id = ? RETURNING seq", (session,)).get


def storable(text: str) -> str:
    """`text` as SQLite can store it: a lone surrogate (JSON allows `"\\ud800"`, UTF-8 does not)
    becomes U+FFFD, so that a prompt holding one still opens its turn and the turn is gated."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in text)
    return text


def open_turn(conn: apsw.Connection, session: str, prompt_id: str, prompt: str | None) -> Turn:
    """The turn of this prompt, opened now or earlier (hooks may deliver twice). The owner's
    words are stored as far as they can be (see storable), credentials redacted: a turn is
    never left ungated."""
    if prompt is not None:
        from gate import credentials  # here: of the hooks, only UserPromptSubmit opens a turn

        prompt = credentials.redact(storable(prompt))
    existing = _turn(conn, "session = ? AND prompt_id = ?", (session, prompt_id))
    if existing is not None:
        if prompt is not None and existing.prompt is None:
            conn.execute("UPDATE turns SET prompt = ? WHERE id = ?", (prompt, existing.id))
            return get_turn(conn, existing.id)  # type: ignore[return-value]
        return existing
    bump(conn, session)
    turn_id = conn.execute(
        "INSERT INTO turns (session, prompt_id, prompt, started) VALUES (?, ?, ?, ?) RETURNING id",
        (session, prompt_id, prompt, clock.now()),
    ).get
    return get_turn(conn, turn_id)  # type: ignore[return-value]


def prompt_turn(conn: apsw.Connection, session: str, prompt_id: str) -> Turn | None:
    """The turn the hooks opened for this prompt, if they did; nothing recorded."""
    return _turn(conn, "session = ? AND prompt_id = ?", (session, prompt_id))


def latest_turn(conn: apsw.Connection, session: str) -> Turn | None:
    return _turn(conn, "session = ? ORDER BY id DESC LIMIT 1", (session,))


def current_turn(conn: apsw.Connection, session: str) -> Turn:
    """The turn a call of this session belongs to when no tool-call id says better: the latest
    hook turn, or the server turn still waiting for its write, or a new server turn."""
    latest = latest_turn(conn, session)
    if latest is not None and (latest.opened_by_hook or latest.wrote == 0):
        return latest
    ensure_session(conn, session)
    turn_id = conn.execute(
        "INSERT INTO turns (session, started) VALUES (?, ?) RETURNING id", (session, clock.now())
    ).get
    return get_turn(conn, turn_id)  # type: ignore[return-value]


def record_tool_call(
    conn: apsw.Connection,
    tool_use_id: str,
    session: str,
    prompt_id: str | None,
    tool: str,
    agent: str | None = None,
) -> Turn:
    """Remember which turn a tool call belongs to, and which subagent made it (`agent`, None for
    the main agent): the PreToolUse hook calls this."""
    if prompt_id:
        turn = open_turn(conn, session, prompt_id, None)
    else:
        turn = current_turn(conn, session)
    conn.execute(
        "INSERT OR IGNORE INTO tool_calls (id, turn, tool, at, agent) VALUES (?, ?, ?, ?, ?)",
        (tool_use_id, turn.id, tool, clock.now(), agent),
    )
    return turn


def context(conn: apsw.Connection, tool_use_id: str | None, process: str) -> str:
    """The context a call's results land in: the server process that answers it (one per Claude
    Code process) and the subagent that made the call, as the PreToolUse hook recorded it."""
    agent = None
    if tool_use_id:
        row = conn.execute("SELECT agent FROM tool_calls WHERE id = ?", (tool_use_id,)).fetchone()
        agent = row[0] if row else None
    return f"{process}/{agent}" if agent else process


def turn_of_tool_call(conn: apsw.Connection, tool_use_id: str) -> Turn | None:
    return _turn(conn, "id = (SELECT turn FROM tool_calls WHERE id = ?)", (tool_use_id,))


def record_search(conn: apsw.Connection, turn: Turn, facts: "Iterable[tuple[int, int]]", context: str = "") -> None:
    """A search of `turn` returned these (fact id, revision) pairs: each must now be answered
    for, and the context that searched has seen each in its current revision."""
    bump(conn, turn.session)
    # A search brings facts to answer for: a turn a write had left 'met' owes again.
    conn.execute(
        "UPDATE turns SET searched = searched + 1, excused = NULL,"
        " outcome = CASE outcome WHEN 'met' THEN NULL ELSE outcome END WHERE id = ?",
        (turn.id,),
    )
    for fact, rev in facts:
        conn.execute(
            "INSERT INTO reads (turn, fact, rev) VALUES (?, ?, ?)"
            " ON CONFLICT (turn, fact) DO UPDATE SET answered = 0, rev = excluded.rev",
            (turn.id, fact, rev),
        )
        conn.execute(
            "INSERT INTO shown (session, context, fact, rev) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (session, context, fact) DO UPDATE SET rev = excluded.rev",
            (turn.session, context, fact, rev),
        )


def shown_revisions(conn: apsw.Connection, session: str, facts: "Iterable[int]", context: str = "") -> dict[int, int]:
    """The revision of each fact this context of the session has been shown, if any."""
    ids = list(facts)
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    rows = conn.execute(
        f"SELECT fact, rev FROM shown WHERE session = ? AND context = ? AND fact IN ({marks})",
        (session, context, *ids),
    )
    return dict(rows)


def forget_shown(conn: apsw.Connection, session: str) -> None:
    """The session's context was compacted or cleared: it remembers no fact any more (nor, to be
    safe, do its subagents)."""
    conn.execute("DELETE FROM shown WHERE session = ?", (session,))


def read_ids(conn: apsw.Connection, turn_id: int) -> set[int]:
    return {row[0] for row in conn.execute("SELECT fact FROM reads WHERE turn = ?", (turn_id,))}


def saw(conn: apsw.Connection, turn_id: int, revisions: "dict[int, int]") -> None:
    """The turn has now seen these facts at these revisions (a refused write showed them)."""
    for fact, rev in revisions.items():
        conn.execute("UPDATE reads SET rev = ? WHERE turn = ? AND fact = ?", (rev, turn_id, fact))


def read_revisions(conn: apsw.Connection, turn_id: int) -> dict[int, int | None]:
    """Each fact the turn read, with the revision it last saw it at (None: not recorded)."""
    return dict(conn.execute("SELECT fact, rev FROM reads WHERE turn = ?", (turn_id,)))


def unanswered(conn: apsw.Connection, turn_id: int, *, facts_here: bool = True) -> list[int]:
    """Facts read this turn, still in memory, that no accepted write has answered for. Where the
    facts are not in this file (`facts_here` false: a team's memory, this file its member's
    ledger), every read no write answered for: whether one is still in memory is the team's to
    say (gate.memory.write asks it), and a write answers for them all."""
    still = " AND fact IN (SELECT id FROM facts)" if facts_here else ""
    rows = conn.execute(f"SELECT fact FROM reads WHERE turn = ? AND answered = 0{still} ORDER BY fact", (turn_id,))
    return [row[0] for row in rows]


def record_write(conn: apsw.Connection, turn: Turn, revisions: "dict[int, int] | None" = None) -> int:
    """An accepted write answered for everything the turn read, each fact now at the revision
    the write left it (its own updates included); return the session's count. `revisions`: each
    read fact's revision now, where the facts are not this file's (a team's memory); a fact
    missing from it is gone."""
    if revisions is None:
        conn.execute(
            "UPDATE reads SET answered = 1, rev = (SELECT rev FROM facts WHERE facts.id = reads.fact) WHERE turn = ?",
            (turn.id,),
        )
    else:
        conn.execute("UPDATE reads SET answered = 1, rev = NULL WHERE turn = ?", (turn.id,))
        conn.executemany(
            "UPDATE reads SET rev = ? WHERE turn = ? AND fact = ?",
            [(rev, turn.id, fact) for fact, rev in revisions.items()],
        )
    conn.execute("UPDATE turns SET wrote = wrote + 1 WHERE id = ?", (turn.id,))
    return bump(conn, turn.session)


def session_seq(conn: apsw.Connection, session: str) -> int:
    row = conn.execute("SELECT seq FROM sessions WHERE id = ?", (session,)).fetchone()
    return row[0] if row else 0


def attribute(conn: apsw.Connection, *, tool_use_id: str | None, session: str) -> Turn:
    """The turn an MCP tool call belongs to, from the best evidence there is:

    1. its tool_use_id (Claude Code's `_meta["claudecode/toolUseId"]`), which the PreToolUse
       hook (or, under the plugin, the mod's note: gate.serve.handoff) mapped to the hook's
       own session and prompt_id: right even where the server's
       session variable is wrong (`--continue`, after `/clear`);
    2. else `session` (CLAUDE_CODE_SESSION_ID, or the server's own id) and its current turn.
    """
    if tool_use_id:
        turn = turn_of_tool_call(conn, tool_use_id)
        if turn is not None:
            return turn
    return current_turn(conn, session)


class Gate:
    """What a turn owes memory before its answer may go out."""

    __slots__ = ("turn", "searched", "wrote", "unanswered")

    def __init__(self, turn: Turn, searched: bool, wrote: bool, unanswered: list[int]):
        self.turn, self.searched, self.wrote, self.unanswered = turn, searched, wrote, unanswered

    @property
    def met(self) -> bool:
        return self.searched and self.wrote and not self.unanswered


def gate(conn: apsw.Connection, session: str, prompt_id: str, *, facts_here: bool = True) -> Gate | None:
    """The gate of the turn of this prompt, or None when no hook opened such a turn (`facts_here`:
    as `unanswered` takes it)."""
    turn = _turn(conn, "session = ? AND prompt_id = ?", (session, prompt_id))
    if turn is None:
        return None
    return Gate(turn, turn.searched > 0, turn.wrote > 0, unanswered(conn, turn.id, facts_here=facts_here))


def hold(conn: apsw.Connection, turn_id: int) -> int:
    """The turn's answer is held back once more; return how many times it has been."""
    return conn.execute("UPDATE turns SET holds = holds + 1 WHERE id = ? RETURNING holds", (turn_id,)).get


def settle(conn: apsw.Connection, turn_id: int, outcome: str) -> None:
    """Record how the turn's answer went out: 'met', or 'released' unmet."""
    conn.execute("UPDATE turns SET outcome = ? WHERE id = ?", (outcome, turn_id))


def excuse(conn: apsw.Connection, turn_id: int, why: str) -> None:
    """Memory could not be reached for this turn (`why`, for the owner): the gate lets its
    answer out rather than hold it for a write no call could make. Not once it is settled."""
    conn.execute("UPDATE turns SET excused = ? WHERE id = ? AND outcome IS NULL", (why, turn_id))


def excused(conn: apsw.Connection, turn_id: int) -> str | None:
    """Why the turn could not keep memory, if the server said so (excuse)."""
    row = conn.execute("SELECT excused FROM turns WHERE id = ?", (turn_id,)).fetchone()
    return row[0] if row else None


def met_by_write(conn: apsw.Connection, turn_id: int) -> None:
    """A write left the turn owing nothing ("nothing owed", the server's own verdict): it is 'met'
    now, for the mod lets the answer out on that verdict with no gate process to settle it (and
    no Stop hook). A later search of the turn unsettles it again (record_search); a released turn
    stays released."""
    conn.execute("UPDATE turns SET outcome = 'met' WHERE id = ? AND outcome IS NULL", (turn_id,))
