"""Changes by hand to a team's memory hold no lock of the member's ledger while the team's
transaction waits on the network: `memory-gate undo` (gate.memory.undo), an edit, delete or undo
on the page (gate.view.editing), and import's last step (gate.memory.transfer). Each opens its
turn in a short ledger transaction before the team's, and records its write in another after
the team's commit (gate.memory.stores: `by_hand`).

Each test stalls the network path at the moment the change's own team transaction talks to the
team, and takes the ledger's write lock from another connection meanwhile, with no busy wait."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import apsw
import pytest
from test_team_faults import Proxy, database, port
from test_team_write_phases import INSERT, Ana

from gate.engine import postgres
from gate.memory import changeset, opening, stores, teamimport, transfer, undo
from gate.memory.changeset import CLI_SESSION, VIEWER_SESSION
from gate.view import editing


def _stall_at(proxy: Proxy, owner, method: str, put=setattr) -> None:
    """The path stalls when `owner.method` is next called: inside the change's team transaction.
    `put`: how it is put there (monkeypatch.setattr on a module, undone after the test)."""
    original = getattr(owner, method)

    def stalling(*args, **kwargs):
        proxy.stall()
        return original(*args, **kwargs)

    put(owner, method, stalling)


def _ledger_free_while_stalled(proxy: Proxy, ana: Ana, change: Callable[[], object]) -> tuple[bool, float, list]:
    """Run `change` while the path stalls; whether another connection took the ledger's write lock
    at once (BEGIN IMMEDIATE, no busy wait) meanwhile, how long it took, and what `change` gave."""
    answered: list = []
    worker = threading.Thread(target=lambda: answered.append(change()))
    worker.start()
    try:
        assert proxy.holding.wait(10), "the change never reached the path"
        assert worker.is_alive()  # waiting on the network now
        other = apsw.Connection(str(ana.path))
        other.setbusytimeout(0)
        started = time.monotonic()
        try:
            other.execute("BEGIN IMMEDIATE")
            other.execute("ROLLBACK")
            free = True
        except apsw.BusyError:
            free = False
        took = time.monotonic() - started
        other.close()
        assert worker.is_alive()  # all that while the change still waited on the path
    finally:
        proxy.resume()
        worker.join(30)
    return free, took, answered


def _member(postgres_url, tmp_path) -> tuple[Proxy, Ana, int, str]:
    """Ana, through a proxy that can stall, with one fact of hers updated once: its id and the
    update's entry (WRITE:FACT)."""
    postgres.connect(postgres_url).close()  # the schema, made
    proxy = Proxy(port(postgres_url))
    ana = Ana(tmp_path / "ana", proxy.url(database(postgres_url)), deadline=30)
    ana.turn("remember how deploys work")
    [fact] = ana.write([INSERT]).new_ids
    ana.turn("deploys go through prod now")
    ana.search("deploy")
    updated = ana.write([{"op": "update", "id": fact, "text": "Deploys go through prod."}])
    return proxy, ana, fact, f"{updated.write_id}:{fact}"


def _hand_writes(ana: Ana, session: str) -> list[str]:
    return [
        row[0]
        for row in ana.ledger.execute(
            "SELECT w.id FROM writes w JOIN turns t ON t.id = w.turn WHERE t.session = ? ORDER BY w.seq", (session,)
        )
    ]


def test_undo_on_a_team_leaves_the_ledger_free_while_the_team_answers(postgres_url, tmp_path):
    proxy, ana, fact, entry = _member(postgres_url, tmp_path)
    try:
        facts = ana.facts()
        _stall_at(proxy, facts, "update")  # the undo puts the fact back: its team transaction
        free, took, answered = _ledger_free_while_stalled(
            proxy, ana, lambda: undo.revert(stores.TeamStore(facts), ana.ledger, entry, command="memory-gate undo")
        )
        changes, hand = ana.changes(), _hand_writes(ana, CLI_SESSION)
        snapshot = stores.TeamStore(ana.facts()).snapshot(fact)
    finally:
        ana.close()
        proxy.close()
    print(f"\nundo on a team, waiting on a stalled path: BEGIN IMMEDIATE on the ledger took {took * 1000:.1f} ms")
    assert free, "the ledger's write lock was held while the team's transaction waited on the network"
    [done] = answered  # the path came back: the undo went through, once, and the ledger records it once
    assert (done.op, done.fact) == ("update", fact)
    assert [(op, written) for op, _, _, written in changes][-1] == ("update", done.write_id)
    assert len(changes) == 3 and hand == [done.write_id]
    assert snapshot is not None and snapshot["text"] == INSERT["text"]


def test_an_undo_the_team_committed_and_the_ledger_missed_is_not_applied_twice(postgres_url, tmp_path, monkeypatch):
    """The ledger's transaction after the team's fails (a full disk, the member killed between):
    the team has the undo and its line, the ledger no write it did not see committed, and the
    same undo run again is refused, for the fact's latest change is now the undo."""
    proxy, ana, fact, entry = _member(postgres_url, tmp_path)
    try:
        memory = stores.TeamStore(ana.facts())

        def lost(*args, **kwargs):
            raise apsw.FullError("database or disk is full")

        monkeypatch.setattr(changeset.ChangeSet, "record", lost)
        with pytest.raises(apsw.FullError):
            undo.revert(memory, ana.ledger, entry, command="memory-gate undo")
        monkeypatch.undo()
        changes, hand = ana.changes(), _hand_writes(ana, CLI_SESSION)
        with pytest.raises(undo.CannotUndo, match="changed after it"):
            undo.revert(memory, ana.ledger, entry, command="memory-gate undo")
        again = ana.changes()
        snapshot = memory.snapshot(fact)
    finally:
        ana.close()
        proxy.close()
    assert len(changes) == 3 and changes[-1][0] == "update" and hand == []
    assert again == changes and snapshot is not None and snapshot["text"] == INSERT["text"]


def _opened(ana: Ana, facts) -> opening.Opened:
    return opening.Opened(ana.path, ana.ledger, facts)


def test_an_edit_on_the_page_of_a_team_leaves_the_ledger_free_while_the_team_answers(postgres_url, tmp_path):
    proxy, ana, fact, _ = _member(postgres_url, tmp_path)
    try:
        facts = ana.facts()
        fields = {"topic": "deploy", "kind": "state", "text": "Deploys go through canary.", "date": "2026-12-01"}
        _stall_at(proxy, facts, "update")
        free, took, answered = _ledger_free_while_stalled(
            proxy, ana, lambda: editing.edit(_opened(ana, facts), fact, fields, rev=2)
        )
        edited = ana.changes()[-1]
        deleting = ana.facts()
        _stall_at(proxy, deleting, "delete")
        proxy.holding.clear()
        free_delete, took_delete, deleted = _ledger_free_while_stalled(
            proxy, ana, lambda: editing.delete(_opened(ana, deleting), fact, rev=3)
        )
        changes, hand = ana.changes(), _hand_writes(ana, VIEWER_SESSION)
    finally:
        ana.close()
        proxy.close()
    print(
        f"\nan edit and a delete on a team's page, waiting on a stalled path: BEGIN IMMEDIATE on the ledger took "
        f"{took * 1000:.1f} ms and {took_delete * 1000:.1f} ms"
    )
    assert free and free_delete, "the ledger's write lock was held while the team's transaction waited on the network"
    assert [text.split(" (")[0] for text in answered + deleted] == [f"fact {fact} updated", f"fact {fact} deleted"]
    assert edited[:3] == ("update", fact, 3) and changes[-1][:2] == ("delete", fact)
    assert hand == [edited[3], changes[-1][3]]  # each recorded once in the ledger, after the team's commit


def test_an_undo_on_the_page_of_a_team_leaves_the_ledger_free_while_the_team_answers(postgres_url, tmp_path):
    proxy, ana, fact, entry = _member(postgres_url, tmp_path)
    try:
        facts = ana.facts()
        _stall_at(proxy, facts, "update")
        free, _, answered = _ledger_free_while_stalled(
            proxy, ana, lambda: editing.revert(_opened(ana, facts), entry, fact_id=fact)
        )
        hand = _hand_writes(ana, VIEWER_SESSION)
    finally:
        ana.close()
        proxy.close()
    assert free, "the ledger's write lock was held while the team's transaction waited on the network"
    [said] = answered
    assert said.startswith(f"undid {entry[:8]}:{fact}") and len(hand) == 1


@pytest.mark.parametrize("step", ["check", "last"])
def test_an_import_into_a_team_leaves_the_ledger_free_while_the_team_answers(postgres_url, tmp_path, monkeypatch, step):
    """At its first step (the lines checked against the project's facts, held in a temporary
    table of the ledger's file) and its last (the team's part of the write, its revisions read,
    then the ledger's)."""
    proxy, ana, _, _ = _member(postgres_url, tmp_path)
    lines = [f'{{"topic": "t{n}", "kind": "state", "text": "Fact number {n} holds."}}' for n in range(5)]
    try:
        facts = ana.facts()
        if step == "last":
            _stall_at(proxy, facts, "revisions")
        else:
            _stall_at(proxy, teamimport, "_mark_duplicates", monkeypatch.setattr)
        free, took, answered = _ledger_free_while_stalled(
            proxy,
            ana,
            lambda: transfer.import_into(ana.ledger, iter(lines), stores.TeamStore(facts), command="memory-gate import"),
        )
        changes, hand = ana.changes(), _hand_writes(ana, CLI_SESSION)
    finally:
        ana.close()
        proxy.close()
    print(f"\nan import's {step} step on a team, waiting on a stalled path: BEGIN IMMEDIATE took {took * 1000:.1f} ms")
    assert free, "the ledger's write lock was held while the team's transaction waited on the network"
    [result] = answered
    assert result.inserted == 5 and len(changes) == 2 + 5
    assert hand == [result.write_id]
