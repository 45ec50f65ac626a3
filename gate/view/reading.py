"""What the pages show, read over a connection as plain values; nothing here changes memory,
and a search here records nothing as read (gate.search.lookup.rank: memory_search's ranking, no turn).

Lists are pages (LIMIT and OFFSET over the index `show` reads in order), so a memory of any
size answers a page in milliseconds; bench/view.py measures it at 100k facts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

import apsw

from gate.engine import store
from gate.engine.facts import Fact
from gate.memory import changeset, history, listing, stats
from gate.memory.opening import Opened
from gate.search import embeddings, fulltext, lookup

PER_PAGE = 50
TURNS_PER_PAGE = 20


# -- facts ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Filters:
    """The facts list's filters, as the page's form sends them (empty: no filter)."""

    topic: str = ""  # the topic holds words starting so (gate.engine.listing.topic_match)
    kind: str = ""
    since: str = ""  # changed on or after this day
    stale: int = 0  # not confirmed by a turn in this many days (what `review` finds)

    def active(self) -> bool:
        return bool(self.topic or self.kind or self.since or self.stale)

    def arguments(self) -> dict:
        return {
            "topic_words": self.topic or None,
            "kind": self.kind or None,
            "since": self.since or None,
            "unconfirmed_before": listing.cutoff(self.stale) if self.stale else None,
        }


@dataclass(frozen=True)
class Page:
    facts: list[Fact]
    total: int
    number: int  # from 1
    per_page: int

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.per_page))


def facts_page(memory: Opened, filters: Filters, number: int = 1, per_page: int = PER_PAGE) -> Page:
    """One page of the facts that pass the filters, the most recently changed first."""
    arguments = filters.arguments()
    listed = memory.store.listing
    total = listed.count(**arguments)
    number = max(1, min(number, max(1, -(-total // per_page))))
    window: dict[str, Any] = {"limit": per_page, "offset": (number - 1) * per_page}
    found = list(listed.facts(**arguments, **window))
    return Page(found, total, number, per_page)


def load(memory: Opened, ids: list[int]) -> dict[int, Fact]:
    """The facts of these ids that memory holds, by id: the local file's, or the team's."""
    return memory.store.listing.load(ids)


def fact(memory: Opened, fact_id: int) -> Fact | None:
    return load(memory, [fact_id]).get(fact_id)


@dataclass(frozen=True)
class Story:
    """A fact's page: the fact as memory holds it now (None: deleted or never there) and every
    committed change to it from its record (gate.memory.record), oldest first."""

    fact: Fact | None
    changes: list[history.Change]
    where: str = "write.log"  # the record they come from: write.log, or the team's

    @property
    def latest(self) -> history.Change | None:
        """The change that can be undone: only the latest (gate.memory.undo)."""
        return self.changes[-1] if self.changes else None

    @property
    def in_step(self) -> bool:
        """Whether memory holds the fact as its last logged change left it."""
        last = self.latest
        now = None if self.fact is None else {key: getattr(self.fact, key) for key in changeset.FIELDS}
        return last is not None and (last.after if last.op != "delete" else None) == now


def story(memory: Opened, fact_id: int) -> Story:
    record = memory.record
    return Story(fact(memory, fact_id), list(record.changes(fact_id)), record.where)


# -- search ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hit:
    fact: Fact
    words: str | None  # how words found it: exact, forms, some (gate.search.fulltext TIERS); None: not by words
    share: float  # the share of the query's weight its words carry (0 when not found by words)
    meaning: bool  # meaning brought it: words alone did not return it


@dataclass
class Found:
    terms: str
    hits: list[Hit]
    notes: list[str] = field(default_factory=list)
    by_meaning: bool = False


TIER_MEANING = {
    "exact": "holds every word (or a known abbreviation of it)",
    "forms": "holds every word, some in another form",
    "some": "holds some of the words",
}


def find(memory: Opened, terms: str, endpoint: embeddings.Endpoint | None) -> Found:
    """memory_search's answer for `terms`, recording nothing, with why each fact came back.

    The ranking (gate.search.ranking) says which facts some query's words found and what share
    of the terms each holds, at no cost of its own: a fact it did not find by words came by
    meaning. A second search, by words or by meaning, to tell why, cost as much as the ranking at
    100k facts and put a page over its 200 ms."""
    ranking = lookup.rank(memory.store.search, terms, endpoint=endpoint)
    why = ranking.why
    by_words = why.candidates if why else {}
    returned = why.by_words if why else set()
    hits = []
    for found in ranking.facts:
        word = by_words.get(found.id) if found.id in returned else None
        hits.append(
            Hit(
                found,
                fulltext.TIERS[word.tier] if word else None,
                word.coverage if word else 0.0,
                found.id not in returned,
            )
        )
    return Found(terms, hits, ranking.notes, ranking.query is not None)


# -- turns ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Read:
    fact: int
    topic: str | None  # None: no longer in memory
    answer: str  # kept, updated, deleted, unchanged, answered, not answered


@dataclass(frozen=True)
class TurnView:
    id: int
    session: str
    prompt_id: str | None
    words: str | None
    started: str
    searches: list[tuple[str | None, int]]  # (terms, facts returned); terms None: not recorded
    searched: int
    reads: list[Read]
    changes: list[dict]  # what its writes did: {"op", "id"}
    wrote: int
    holds: int
    outcome: str | None

    @property
    def verdict(self) -> str:
        if self.outcome == "met":
            return "complied" if not self.holds else "complied after a hold"
        if self.outcome == "released":
            return "released unmet"
        if self.prompt_id is None:
            return "no hooks: not gated"
        return "not ruled on"


def turns_page(memory: Opened, before: int | None = None, limit: int = TURNS_PER_PAGE) -> list[TurnView]:
    """The agents' turns, the newest first (the hand sessions' own turns left out); `before`: only
    turns older than that id (the next page). On a team, this member's own turns: the ledger is
    each member's local file (none yet: no turns)."""
    conn = memory.conn
    if conn is None:
        return []
    rows = list(
        conn.execute(
            "SELECT id, session, prompt_id, prompt, started, searched, wrote, holds, outcome FROM turns"
            f" WHERE session NOT IN ({','.join('?' * len(changeset.HAND_SESSIONS))}) AND id < ?"
            " ORDER BY id DESC LIMIT ?",
            (*changeset.HAND_SESSIONS, before or 1 << 62, limit),
        )
    )
    turns = [_turn(conn, row) for row in rows]
    # The topic of each fact read, as memory holds it now (the team's, on a team).
    held = load(memory, sorted({read.fact for turn in turns for read in turn.reads}))
    return [
        replace(
            turn,
            reads=[replace(read, topic=held[read.fact].topic if read.fact in held else None) for read in turn.reads],
        )
        for turn in turns
    ]


def newer_turns(memory: Opened, first: int, limit: int = TURNS_PER_PAGE) -> int | None:
    """The `before` of the page of turns newer than turn `first` (the previous page); None when
    that page is the first (no `before`: the newest turns)."""
    conn = memory.conn
    if conn is None:
        return None
    row = conn.execute(
        "SELECT id FROM turns"
        f" WHERE session NOT IN ({','.join('?' * len(changeset.HAND_SESSIONS))}) AND id > ?"
        " ORDER BY id LIMIT 1 OFFSET ?",
        (*changeset.HAND_SESSIONS, first, limit),
    ).fetchone()
    return row[0] if row else None


def _turn(conn: apsw.Connection, row: tuple) -> TurnView:
    turn_id = row[0]
    searches = list(conn.execute("SELECT terms, facts FROM searches WHERE turn = ? ORDER BY id", (turn_id,)))
    how: dict[int, str | None] = {}
    changes: list[dict] = []
    for (answer,) in conn.execute("SELECT answer FROM writes WHERE turn = ? ORDER BY seq", (turn_id,)):
        try:
            data = json.loads(answer)
        except ValueError:
            continue
        for done in data.get("done") or []:
            if isinstance(done, dict) and isinstance(done.get("id"), int):
                op: Any = done.get("op")
                how[done["id"]] = {"update": "updated", "delete": "deleted", "unchanged": "kept"}.get(op, op)
                if done.get("op") in ("insert", "update", "delete"):
                    changes.append(done)
        for kept in data.get("kept") or []:
            how.setdefault(kept, "kept")
    reads = [
        Read(fact_id, None, how.get(fact_id) or ("answered" if answered else "not answered"))
        for fact_id, answered in conn.execute(
            "SELECT fact, answered FROM reads WHERE turn = ? ORDER BY fact", (turn_id,)
        )
    ]
    return TurnView(
        id=turn_id,
        session=row[1],
        prompt_id=row[2],
        words=row[3],
        started=row[4],
        searches=searches,
        searched=row[5],
        reads=reads,
        changes=changes,
        wrote=row[6],
        holds=row[7],
        outcome=row[8],
    )


# -- figures for the charts ---------------------------------------------------------------------


@dataclass(frozen=True)
class Day:
    day: str
    at_once: int
    after_hold: int
    released: int


def outcomes_by_day(conn: apsw.Connection, days: int = 30) -> list[Day]:
    """Gated turns per day, the last `days` days that had any: complied (at once, after a
    hold) and released unmet, as `memory-gate stats` counts them."""
    rows = conn.execute(
        "SELECT substr(started, 1, 10) AS day,"
        " count(CASE WHEN outcome = 'met' AND holds = 0 THEN 1 END),"
        " count(CASE WHEN outcome = 'met' AND holds > 0 THEN 1 END),"
        " count(CASE WHEN outcome = 'released' THEN 1 END)"
        " FROM turns WHERE outcome IS NOT NULL GROUP BY day ORDER BY day DESC LIMIT ?",
        (days,),
    )
    return [Day(*row) for row in reversed(list(rows))]


def search_cost_by_day(conn: apsw.Connection, days: int = 30) -> list[tuple[str, float]]:
    """The characters an average search put into the context, per day."""
    rows = conn.execute(
        "SELECT substr(at, 1, 10) AS day, avg(chars) FROM searches GROUP BY day ORDER BY day DESC LIMIT ?", (days,)
    )
    return [(day, round(chars, 1)) for day, chars in reversed(list(rows))]


def stats_report(memory: Opened) -> dict:
    """`memory-gate stats`' figures: the facts memory holds (the team's, on a team) and the turns
    of the ledger (on a team, this member's own)."""
    return stats.report(memory.ledger(), kinds=memory.store.listing.kinds())


class Watcher:
    """What a live-update stream polls, on connections of its own: a value that moves whenever
    memory changes. A local memory's `PRAGMA data_version`, which moves whenever another
    connection commits; on a team, the project's newest change in its record (`changes.seq`,
    whoever made it) and the member's ledger's data_version (their own turns)."""

    def __init__(self, memory: Opened):
        from gate.memory import team

        self.path = memory.path
        self.ledger: apsw.Connection | None = None
        self.member = team.Member(memory.member.team, memory.member.member) if memory.member else None

    def version(self) -> tuple:
        if self.ledger is None and self.path.exists():
            self.ledger = store.connect(self.path, create=False)
        local = self.ledger.execute("PRAGMA data_version").get if self.ledger is not None else 0
        if self.member is None:
            return (local,)
        try:
            team = self.member.facts(changeset.VIEWER_SESSION)
            with team.transaction():
                newest = team.conn.execute(
                    "SELECT coalesce(max(seq), 0) FROM changes WHERE project = %s", (team.project,)
                ).fetchone()[0]
        except store.StoreError:
            self.member.drop()  # out of reach: the next poll connects again
            newest = None
        return (newest, local)

    def close(self) -> None:
        if self.ledger is not None:
            self.ledger.close()
        if self.member is not None:
            self.member.close()
