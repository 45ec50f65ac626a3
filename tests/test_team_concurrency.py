"""Several members at once on one team's memory, each with real `memory-gate serve` processes
(their own homes and ledgers), over stdio with the official SDK's client, on overlapping facts;
and the team's PostgreSQL stopped and started again in the middle of the run.

Each round every member searches, waits for the others to have searched, then updates the same
fact: one wins, and every other is refused with the fact's new state and who changed it, searches
again and answers for what is there now, until its own update goes in. Afterwards no accepted
change is missing from the record, none is there that no member was told was accepted, and the
record replayed gives the facts exactly."""

from __future__ import annotations

import re
import sys

import anyio
import psycopg
import pytest
from conftest import child_env
from mcp import Client
from mcp.client.stdio import StdioServerParameters

MEMBERS = ("ana@laptop", "bo@desk", "cy@ci")
FACTS = 4
ROUNDS = 4
OUTAGE_AFTER = 2  # rounds before the server is stopped, and started again


def text(result) -> str:
    return result.content[0].text


@pytest.fixture
def server():
    import postgres_server as pg

    found = pg.binaries()
    if found is None:
        pytest.skip("needs pgserver's PostgreSQL (pip install -e '.[test]')")
    started = pg.Server(found).start()
    yield started
    started.remove()


def test_members_at_once_lose_no_change_and_every_clash_is_refused_with_the_new_state(server, tmp_path):
    url = server.url()
    project = tmp_path / "repo"
    project.mkdir()
    accepted: list[tuple[str, int, str]] = []  # (member, fact, text) of every update a member was told went in
    refusals: list[tuple[str, int, str]] = []  # (member refused, fact, the refusal's text)
    outage: dict[str, tuple] = {}

    def params(member: str) -> StdioServerParameters:
        home = tmp_path / member.split("@")[0]
        env = child_env(home, MEMORY_GATE_DB=url, MEMORY_GATE_PROJECT="acme-api", MEMORY_GATE_MEMBER=member)
        return StdioServerParameters(command=sys.executable, args=["-m", "gate", "serve"], env=env, cwd=str(project))

    async def main():
        async with Client(params(MEMBERS[0])) as first:
            await first.call_tool("memory_search", {"terms": "shared"})
            inserted = await first.call_tool("memory_write", {"ops": [
                {"op": "insert", "topic": "shared", "kind": "state", "text": f"Shared fact {n} as first written."}
                for n in range(1, FACTS + 1)
            ], "kept": []})
            assert inserted.structured_content["new_ids"] == list(range(1, FACTS + 1)), text(inserted)

        clients = {}
        async with Client(params(MEMBERS[0])) as a, Client(params(MEMBERS[1])) as b, Client(params(MEMBERS[2])) as c:
            clients = dict(zip(MEMBERS, (a, b, c)))
            for round_ in range(ROUNDS):
                if round_ == OUTAGE_AFTER:
                    await anyio.to_thread.run_sync(server.stop)
                    for member, client in clients.items():
                        searched = await client.call_tool("memory_search", {"terms": "shared"})
                        wrote = await client.call_tool("memory_write", {"ops": [], "kept": []})
                        outage[member] = (searched, wrote)
                    await anyio.to_thread.run_sync(server.start_again)
                target = round_ % FACTS + 1
                searched = anyio.Event()
                waiting = [len(clients)]

                async def member_round(member: str, client) -> None:
                    found = await client.call_tool("memory_search", {"terms": "shared fact"})
                    assert not found.is_error, text(found)
                    waiting[0] -= 1
                    if not waiting[0]:
                        searched.set()
                    await searched.wait()  # every member has read the fact before any writes it
                    new = f"Shared fact {target} as {member} left it in round {round_}."
                    for attempt in range(len(clients) + 1):
                        ids = [fact["id"] for fact in found.structured_content["facts"]]
                        assert target in ids
                        wrote = await client.call_tool("memory_write", {
                            "ops": [{"op": "update", "id": target, "text": new}],
                            "kept": [fact for fact in ids if fact != target],
                        })
                        if not wrote.is_error:
                            accepted.append((member, target, new))
                            return
                        refusals.append((member, target, text(wrote)))
                        found = await client.call_tool("memory_search", {"terms": "shared fact"})
                    raise AssertionError(f"{member} was refused {len(clients) + 1} times in round {round_}")

                async with anyio.create_task_group() as group:
                    for member, client in clients.items():
                        group.start_soon(member_round, member, client)

    anyio.run(main)

    # Every member's update of every round went in, once.
    assert sorted(accepted) == sorted(
        (member, round_ % FACTS + 1, f"Shared fact {round_ % FACTS + 1} as {member} left it in round {round_}.")
        for member in MEMBERS for round_ in range(ROUNDS)
    )
    # Each round all but one were refused at first, each told who changed the fact and what it says now.
    assert len(refusals) >= (len(MEMBERS) - 1) * ROUNDS
    for member, fact, message in refusals:
        found = re.search(rf"fact {fact} was changed after this turn read it, by (\S+) \(", message)
        assert found and found.group(1) in MEMBERS and found.group(1) != member, message
        assert re.search(rf'Now: \[shared\] "Shared fact {fact} as \S+ left it in round \d+\."', message), message

    # During the outage: the search said so in one line, the write was refused, nothing changed.
    for member, (searched, wrote) in outage.items():
        assert not searched.is_error and searched.structured_content["facts"] == []
        assert "could not be reached" in searched.structured_content["notes"][0]
        assert wrote.is_error and "nothing was written" in text(wrote)

    with psycopg.connect(url) as team:
        record = team.execute(
            "SELECT fact, op, rev, member, after->>'text' FROM memory_gate.changes ORDER BY seq").fetchall()
        facts = dict(team.execute("SELECT id, text FROM memory_gate.facts").fetchall())
        revs = dict(team.execute("SELECT id, rev FROM memory_gate.facts").fetchall())
    # The record holds exactly the changes members were told went in, and nothing else.
    updates = [(member, fact, new) for fact, op, _, member, new in record if op == "update"]
    assert sorted(updates) == sorted(accepted)
    assert [op for _, op, *_ in record].count("insert") == FACTS
    # Replayed, the record gives the facts and their revisions exactly.
    replayed: dict[int, tuple[int, str]] = {}
    for fact, op, rev, _, new in record:
        expected = 1 if op == "insert" else replayed[fact][0] + 1
        assert rev == expected
        replayed[fact] = (rev, new)
    assert {fact: new for fact, (_, new) in replayed.items()} == facts
    assert {fact: rev for fact, (rev, _) in replayed.items()} == revs
