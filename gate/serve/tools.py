"""The two tools as the agent meets them, apart from any transport: a search that records what
it showed the turn (and what its answer cost the context: gate.memory.searches), and a write checked
against it. gate.serve.server puts these behind MCP, and gate.serve.front serves the first calls
with the same functions while the MCP SDK loads (search_call, write_call: one body for both), on
the server's one connection to memory (gate.serve.connection).

With an embeddings endpoint, a search embeds its query before its transaction and ranks by words
and meaning; when meaning fails, it ranks by words and says why in one line of the answer."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import apsw

from gate import clock, config, credentials
from gate.engine import postgres, store
from gate.memory import checking, ledger, searches, stores, write
from gate.search import embeddings, fulltext, lookup
from gate.serve import connection, handoff, render

TYPE_CHECKING = False
if TYPE_CHECKING:  # a team's memory is imported only where one is used
    from gate.engine.seam import Store
    from gate.memory import team as memory_team


@dataclass(frozen=True)
class Caller:
    """Who is calling: the session to fall back on, Claude Code's id for the tool call, the
    server process answering it (a fact is shown once per context: gate.memory.ledger), and
    where the plugin's mod leaves each call's turn (gate.serve.handoff), if anywhere."""

    session: str
    tool_use_id: str | None = None
    process: str = ""
    handoff: Path | None = None

    def attribute(self, conn: apsw.Connection) -> ledger.Turn:
        """The call's turn; inside the transaction that records the call, so that the mod's note
        and what the call did commit together."""
        if self.tool_use_id and self.handoff is not None:
            note = handoff.claim(self.handoff, self.tool_use_id)
            if note is not None:
                ledger.record_tool_call(conn, self.tool_use_id, note.session, note.prompt_id, note.tool, note.agent)
        return ledger.attribute(conn, tool_use_id=self.tool_use_id, session=self.session)

    def context(self, conn: apsw.Connection) -> str:
        return ledger.context(conn, self.tool_use_id, self.process)

    def owner_words(self, conn: apsw.Connection) -> str | None:
        """What the owner wrote in the call's turn, as the hooks stored it (credentials
        redacted), or None; read before the search's transaction and recording nothing, so that
        their vector is asked for outside it. Found as `attribute` finds the turn."""
        turn = None
        if self.tool_use_id:
            turn = ledger.turn_of_tool_call(conn, self.tool_use_id)
            if turn is None and self.handoff is not None:
                note = handoff.peek(self.handoff, self.tool_use_id)
                if note is not None and note.prompt_id:
                    turn = ledger.prompt_turn(conn, note.session, note.prompt_id)
        if turn is None:
            turn = ledger.latest_turn(conn, self.session)
        return turn.prompt if turn is not None and turn.prompt else None


SEARCH_EXAMPLE = '{"terms": "deploy staging"}'


def argument_problem(tool: str, arguments: dict[str, Any]) -> str | None:
    """What is wrong with the arguments of a call to one of the two tools, with the mend, or None.
    Only what the tools' signatures require is checked here; the write checks the rest."""
    if tool == "memory_search":
        terms = arguments.get("terms")
        if "terms" not in arguments:
            return f"memory_search needs terms: a few keywords of what the owner asks, e.g. {SEARCH_EXAMPLE}."
        if not isinstance(terms, str):
            return f"memory_search: terms must be a string of keywords (got {checking.brief(terms)}), e.g. {SEARCH_EXAMPLE}."
    elif tool == "memory_write":
        missing = [
            f"{name} is missing: {mend}"
            for name, mend in (
                ("ops", 'give the changes as a list, e.g. [{"op": "delete", "id": 7}], or [] if nothing changed.'),
                ("kept", "give the ids read this turn that still hold, e.g. [12, 15], or [] if none."),
            )
            if name not in arguments
        ]
        if missing:
            return write.render_refusal(missing)
    return None


@dataclass
class SearchAnswer:
    terms: str
    results: list[render.Result]
    owner_words: str | None
    notes: list[str] = field(default_factory=list)
    next_step: str | None = None  # what `next` says instead of the contract (memory out of reach)
    turn: ledger.Turn | None = None  # the turn the search was recorded for, if it was

    def __post_init__(self):
        # What the answer repeats is redacted: the owner's words and the agent's terms, and fact
        # texts stored before the credential check knew their shape.
        self.terms = credentials.redact(self.terms)
        self.owner_words = credentials.redact(self.owner_words) if self.owner_words is not None else None
        self.results = [_redacted(result) for result in self.results]

    @property
    def text(self) -> str:
        return render.search_text(self.terms, self.results, self.owner_words, self.notes, self.next_step)

    def structured(self) -> dict[str, Any]:
        return render.search_data(self.results, self.owner_words, self.notes, self.next_step)


# A session's searches, and the memory page, show the same facts again and again: each stored
# text is checked once per process (at most 8192 texts of at most 600 characters remembered).
@functools.lru_cache(maxsize=8192)
def masked(text: str) -> str:
    """A stored text as it may be shown: gate.credentials's `redact`, remembered."""
    return credentials.redact(text)


def _redacted(result: render.Result) -> render.Result:
    fact = result.fact
    topic, text = masked(fact.topic), masked(fact.text)
    if topic == fact.topic and text == fact.text:
        return result
    return render.Result(replace(fact, topic=topic, text=text), result.full)


def memory_search(
    conn: apsw.Connection | None,
    terms: str,
    caller: Caller,
    *,
    limit: int = fulltext.RESULTS,
    endpoint: embeddings.Endpoint | None = None,
    search: lookup.Search | None = None,
) -> SearchAnswer:
    """Search for the caller's turn; every fact returned becomes a read the turn must answer
    for. With no database yet (`conn` None) memory is empty and nothing is recorded. `conn` is
    the turn ledger; the facts are the memory `search` ranks (lookup.LocalSearch or
    lookup.TeamSearch), by default the ledger's own file's."""
    if not isinstance(terms, str):
        raise TypeError("terms must be a string")
    if conn is None:
        return SearchAnswer(terms, [], None)
    search = search if search is not None else lookup.LocalSearch(conn)
    notes: list[str] = []
    # The owner's words of the turn are the second query: a correction's own words find the
    # fact it makes false where the agent's keywords miss it (gate.search.ranking).
    queries = lookup.queries_for(terms, caller.owner_words(conn))
    # Before the ledger's transaction: its lock is never held across the network, and a team out
    # of reach (postgres.Unreachable, raised from here) leaves the ledger as it was.
    ahead = search.ahead(queries, endpoint, notes, limit)
    query, waiting = ahead.query, ahead.waiting
    recorded_terms = searches.kept_terms(terms)
    try:
        with store.writing(conn):
            turn = caller.attribute(conn)
            ordered = search.ordered(ahead, queries, endpoint, notes, limit)
            lookup.say_waiting(waiting, endpoint, query, notes)
            context = caller.context(conn)
            seen = ledger.shown_revisions(conn, turn.session, [fact.id for fact in ordered], context)
            results = [render.Result(fact, full=seen.get(fact.id) != fact.rev) for fact in ordered]
            ledger.record_search(conn, turn, [(fact.id, fact.rev) for fact in ordered], context)
            answer = SearchAnswer(terms, results, turn.prompt, notes, turn=turn)
            searches.record_search(
                conn,
                turn.id,
                facts=len(results),
                full=sum(result.full for result in results),
                chars=searches.answer_chars(answer.structured()),
                at=clock.now(),
                terms=recorded_terms,
                meaning=lookup.meaning_state(endpoint, query, notes),
            )
    except (apsw.ReadOnlyError, apsw.FullError, apsw.IOError) as error:
        # Memory can still be read: answer, and say the turn's reads were not recorded.
        notes.append(f"this search was not recorded: {store.explain(error)}")
        ordered = search.ordered(ahead, queries, endpoint, notes, limit)
        lookup.say_waiting(waiting, endpoint, query, notes)
        return SearchAnswer(terms, [render.Result(fact, full=True) for fact in ordered], None, notes)
    return answer


@dataclass
class WriteAnswer:
    outcome: write.Outcome
    turn: ledger.Turn | None = None  # the turn the write was accepted for

    @property
    def answered(self) -> list[int]:
        """The facts the write answered for: kept, or changed (updated, deleted), and those read
        that memory no longer holds (nothing can answer for them)."""
        o = self.outcome
        return [*o.kept, *(item["id"] for item in o.done if isinstance(item.get("id"), int)), *o.gone]

    @property
    def text(self) -> str:
        o = self.outcome
        return render.write_text(o.done, o.kept, o.notes, o.replayed, o.owes_search, o.gone)

    def structured(self) -> dict[str, Any]:
        o = self.outcome
        return render.write_data(o.done, o.kept, o.notes, o.replayed, o.owes_search, o.gone)


def memory_write(
    conn: apsw.Connection,
    ops: Any,
    kept: Any,
    caller: Caller,
    *,
    log: Path | None,
    endpoint: embeddings.Endpoint | None = None,
    memory: Store | None = None,
) -> WriteAnswer:
    """Apply the write for the caller's turn, or raise write.Refused naming every problem. To
    the facts of `memory` (gate.memory.stores: a team's, each change recorded there with its
    member), by default the ledger's own file's, its changes logged in `log` (write.log; None
    only for in-memory databases)."""
    memory = memory if memory is not None else stores.LocalStore(conn, log)
    attributed: list[ledger.Turn] = []

    def attribute(conn: apsw.Connection) -> ledger.Turn:
        attributed.append(caller.attribute(conn))
        return attributed[-1]

    outcome = write.apply(
        conn,
        ops,
        kept,
        attribute=attribute,
        memory=memory,
        tool_use_id=caller.tool_use_id,
        endpoint=endpoint,
    )
    return WriteAnswer(outcome, attributed[-1] if attributed else None)


def unreachable(error: postgres.Unreachable, team: memory_team.Team) -> str:
    """Why the turn cannot keep memory, as the owner reads it when the gate lets the answer out:
    an outage, or (postgres.Held) a reachable team whose project another member's write holds."""
    if isinstance(error, postgres.Held):
        return f"the team's memory ({team.shown}, project {team.project}) is busy: {error.reason}"
    return f"the team's memory ({team.shown}, project {team.project}) could not be reached: {error.reason}"


def excuse(conn: apsw.Connection, caller: Caller, why: str) -> ledger.Turn:
    """Record that the caller's turn could not reach its memory: the gate lets its answer out
    with `why` on the owner's screen instead of holding it for a write no call could make."""
    with store.writing(conn):
        turn = caller.attribute(conn)
        ledger.excuse(conn, turn.id, why)
    return turn


def unreachable_search(conn: apsw.Connection, terms: str, caller: Caller, why: str) -> SearchAnswer:
    """memory_search's answer when the team's memory cannot be reached: nothing, said in one line."""
    turn = excuse(conn, caller, why)
    note = (
        f"{why}. Nothing was searched: answer the owner without memory this turn and do not call "
        "memory_write for it; the owner is told memory was not kept"
    )
    return SearchAnswer(terms, [], turn.prompt, [note], next_step=render.UNREACHED, turn=turn)


def unreachable_write(why: str, held: bool = False) -> str:
    if held:  # reachable, only busy for seconds: the turn still owes its write
        return (
            f"memory_write: nothing was written, because {why}. Call memory_write again with the same "
            "ops and kept in a few seconds."
        )
    return (
        f"memory_write: nothing was written, because {why}. Do not try again this turn: answer the "
        "owner, saying memory was not updated, and memory-gate lets the answer out with a warning. "
        "The owner can check the connection with `memory-gate team status`."
    )


class CallFailed(Exception):
    """A call the agent must be told failed (the message names the mend): the MCP answer is an
    error result, not a crash."""


def _decode(value: Any) -> Any:
    """Some clients send a list argument as its JSON text: take it as the list it spells."""
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except ValueError:
            return value
        return decoded if isinstance(decoded, list) else value
    return value


def search_call(memory: connection.Memory, terms: str, caller: Caller) -> SearchAnswer:
    """memory_search as a call on the server's connection (its arguments already checked)."""
    with memory.lock:
        try:
            member = memory.team()
            # A team's member records reads in a ledger of their own from the first search.
            conn = memory.connection(create=member is not None)
            if member is None:
                local = lookup.LocalSearch(conn, memory.matrix) if conn is not None else None
                answer = memory_search(conn, terms, caller, endpoint=memory.endpoint, search=local)
            else:
                try:
                    facts = member.facts(caller.session, caller.tool_use_id)
                    search = lookup.TeamSearch(facts, memory.mirror())
                    answer = memory_search(conn, terms, caller, endpoint=memory.endpoint, search=search)
                except postgres.Unreachable as error:
                    member.drop()
                    assert conn is not None, "made for a team's member: create=True"
                    answer = unreachable_search(conn, terms, caller, unreachable(error, member.team))
            if answer.turn is not None:  # the server's own record, which the Stop hook asks
                memory.record.searched(answer.turn, [result.fact.id for result in answer.results])
            if memory.words_only:
                # Meaning is off for want of a model: said on the first search, not on every one.
                answer.notes.append(memory.words_only)
                memory.words_only = None
            memory.catch_up()
        except config.ConfigError as error:
            raise CallFailed(str(error)) from error
        except (apsw.Error, store.StoreError, OSError) as error:
            raise CallFailed(store.explain(error)) from error
    return answer


def write_call(memory: connection.Memory, ops: Any, kept: Any, caller: Caller) -> WriteAnswer:
    """memory_write as a call on the server's connection; a refusal names every problem."""
    with memory.lock:
        try:
            member = memory.team()
            conn = memory.connection(create=True)
            assert conn is not None, "create=True makes it"
            if member is None:
                answer = memory_write(
                    conn, _decode(ops), _decode(kept), caller, log=memory.log, endpoint=memory.endpoint
                )
            else:
                try:
                    facts = member.facts(caller.session, caller.tool_use_id)
                    answer = memory_write(
                        conn,
                        _decode(ops),
                        _decode(kept),
                        caller,
                        log=None,
                        endpoint=memory.endpoint,
                        memory=stores.TeamStore(facts),
                    )
                except postgres.Unreachable as error:
                    held = isinstance(error, postgres.Held)
                    if not held:  # a lock wait leaves the connection sound
                        member.drop()
                    why = unreachable(error, member.team)
                    if not held:
                        excuse(conn, caller, why)
                    raise CallFailed(unreachable_write(why, held)) from error
            if answer.turn is not None:
                memory.record.wrote(answer.turn, answer.answered)
            memory.catch_up()
        except config.ConfigError as error:
            raise CallFailed(str(error)) from error
        except write.Refused as refused:
            raise CallFailed(str(refused)) from refused
        except (apsw.Error, store.StoreError, OSError) as error:
            raise CallFailed(store.explain(error)) from error
    return answer
