"""The two tools as the agent meets them, apart from any transport: a search that records what
it showed the turn, and a write checked against it. gate/server.py puts these behind MCP."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import apsw

from gate import ledger, render, search, write


@dataclass(frozen=True)
class Caller:
    """Who is calling: the session to fall back on, and Claude Code's id for the tool call."""

    session: str
    tool_use_id: str | None = None

    def attribute(self, conn: apsw.Connection) -> ledger.Turn:
        return ledger.attribute(conn, tool_use_id=self.tool_use_id, session=self.session)


@dataclass
class SearchAnswer:
    terms: str
    results: list[render.Result]
    owner_words: str | None
    notes: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return render.search_text(self.terms, self.results, self.owner_words, self.notes)

    def structured(self) -> dict[str, Any]:
        return render.search_data(self.results, self.owner_words, self.notes)


def memory_search(
    conn: apsw.Connection | None, terms: str, caller: Caller, *, limit: int = search.RESULTS
) -> SearchAnswer:
    """Search for the caller's turn; every fact returned becomes a read the turn must answer
    for. With no database yet (`conn` None) memory is empty and nothing is recorded."""
    if not isinstance(terms, str):
        raise TypeError("terms must be a string")
    if conn is None:
        return SearchAnswer(terms, [], None)
    conn.execute("BEGIN IMMEDIATE")
    try:
        turn = caller.attribute(conn)
        ranked = search.by_words(conn, terms)[:limit]
        facts = search.load(conn, ranked)
        ordered = [facts[rowid] for rowid in ranked if rowid in facts]
        seen = ledger.shown_revisions(conn, turn.session, [fact.id for fact in ordered])
        results = [render.Result(fact, full=seen.get(fact.id) != fact.rev) for fact in ordered]
        ledger.record_search(conn, turn, [(fact.id, fact.rev) for fact in ordered])
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return SearchAnswer(terms, results, turn.prompt)


@dataclass
class WriteAnswer:
    outcome: write.Outcome

    @property
    def text(self) -> str:
        o = self.outcome
        return render.write_text(o.done, o.kept, o.notes, o.replayed)

    def structured(self) -> dict[str, Any]:
        o = self.outcome
        return render.write_data(o.done, o.kept, o.notes, o.replayed)


def memory_write(
    conn: apsw.Connection, ops: Any, kept: Any, caller: Caller, *, log: Path | None
) -> WriteAnswer:
    """Apply the write for the caller's turn, or raise write.Refused naming every problem."""
    outcome = write.apply(
        conn, ops, kept, attribute=caller.attribute, log=log, tool_use_id=caller.tool_use_id
    )
    return WriteAnswer(outcome)
