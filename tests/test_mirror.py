"""A member's mirror of the team's words (gate.search.mirror) on a real PostgreSQL: what another
member wrote, changed or deleted is found or not by the next search, and a mirror that cannot be
trusted (unreadable, another project's, ahead of the team's record, its count astray) is built
anew, never believed."""

from __future__ import annotations

import os
import shutil
import time

import pytest

from gate.engine import postgres, store
from gate.engine.teamfacts import TeamFacts, Who, project
from gate.memory import ledger, stores
from gate.search import fulltext, lookup, mirror
from gate.search.team import TeamIndex
from gate.serve import tools


class Member:
    """One member: a ledger, a mirror beside it, and a connection of their own to the team."""

    def __init__(self, name: str, folder, url: str, key: str = "shared-repo"):
        folder.mkdir()
        self.name, self.ledger = name, store.connect(folder / "memory.db")
        self.mirror = mirror.Mirror(mirror.path_for(str(folder / "memory.db")))
        self.team = postgres.connect(url)
        with self.team.transaction():
            self.project = project(self.team, key, "2026-12-01T00:00:00Z")
        self.session, self.turns = f"session-{name}", 0

    def facts(self) -> TeamFacts:
        return TeamFacts(self.team, self.project, Who(self.name, self.session))

    def search(self, terms: str) -> list[int]:
        self.turns += 1
        ledger.open_turn(self.ledger, self.session, f"{self.name}-p{self.turns}", terms)
        answer = tools.memory_search(
            self.ledger, terms, tools.Caller(self.session), search=lookup.TeamSearch(self.facts(), self.mirror)
        )
        return [result.fact.id for result in answer.results]

    def write(self, *ops) -> list[dict]:
        answer = tools.memory_write(self.ledger, list(ops), [], tools.Caller(self.session), log=None, memory=stores.TeamStore(self.facts()))
        return answer.outcome.done

    def close(self) -> None:
        self.mirror.close()
        self.ledger.close()
        self.team.close()


@pytest.fixture
def members(postgres_url, tmp_path):
    made = [Member(name, tmp_path / name, postgres_url) for name in ("ana@laptop", "bo@desk")]
    yield made
    for member in made:
        member.close()


def insert(topic: str, text: str) -> dict:
    return {"op": "insert", "topic": topic, "kind": "state", "text": text}


def test_what_another_member_writes_changes_or_deletes_is_found_or_not_by_the_next_search(members):
    ana, bo = members
    assert bo.search("deploy") == [] and bo.mirror.missed is None  # the mirror served, empty
    [done] = ana.write(insert("deploy", "Deploys go through staging."))
    fact = done["id"]
    assert bo.search("staging") == [fact] and bo.mirror.missed is None
    ana.search("deploy")
    ana.write({"op": "update", "id": fact, "text": "Deploys go through the canary cluster."})
    assert bo.search("staging") == []
    assert bo.search("canary") == [fact]
    ana.search("canary")
    ana.write({"op": "delete", "id": fact})
    assert bo.search("canary") == [] and bo.mirror.missed is None
    with store.writing(bo.mirror._conn) as conn:  # the mirror's own file: the fact is gone from it
        assert conn.execute("SELECT count(*) FROM facts").fetchone() == (0,)


def test_the_mirror_ranks_as_the_teams_words_do(members):
    ana, bo = members
    for topic, text in [
        ("deploy", "Deploys go through staging first."),
        ("staging", "Staging runs on k8s."),
        ("deploy", "A deploy on Friday needs a second reviewer."),
        ("database", "Postgres 16 in prod."),
        ("review", "Every deploy is reviewed; staging deploys too."),
    ]:
        ana.write(insert(topic, text))
    facts = bo.facts()
    for typed in ("deploy", "staging deploy", "postgres prod", "reviewer friday deploy", "deploys", "nothing here"):
        with facts.transaction():
            mirrored = bo.mirror.index(facts)
            assert mirrored is not None
            with bo.mirror.reading():
                found = fulltext.by_words_in(mirrored, typed)
            assert found == fulltext.by_words_in(TeamIndex(facts.conn, facts.project), typed), typed


def test_an_unreadable_mirror_is_made_anew(members):
    ana, bo = members
    [done] = ana.write(insert("deploy", "Deploys go through staging."))
    assert bo.search("staging") == [done["id"]]
    bo.mirror.close()
    with open(bo.mirror.path, "r+b") as handle:  # its pages overwritten
        handle.seek(0)
        handle.write(b"\xff" * 8192)
    assert bo.search("staging") == [done["id"]]
    assert bo.search("staging") == [done["id"]] and bo.mirror.missed is None


def test_another_projects_mirror_is_not_believed(postgres_url, tmp_path, members):
    ana, bo = members
    other = Member("cy@home", tmp_path / "cy", postgres_url, key="other-repo")
    try:
        ana.write(insert("deploy", "Deploys go through staging."))
        [done] = other.write(insert("deploy", "The other project deploys by hand."))
        assert other.search("hand") == [done["id"]]
        # bo's project then holds as many facts, and changes after the other mirror's last one.
        [extra] = ana.write(insert("deploy", "A fact soon gone."))
        ana.search("gone")
        ana.write({"op": "delete", "id": extra["id"]})
        other.mirror.close()
        shutil.copy(other.mirror.path, bo.mirror.path)  # another project's words where bo's will be
        assert bo.search("hand") == []
        assert bo.search("staging") != [] and bo.mirror.missed is None
    finally:
        other.close()


def test_a_mirror_ahead_of_the_teams_record_is_made_anew(members):
    ana, bo = members
    [done] = ana.write(insert("deploy", "Deploys go through staging."))
    assert bo.search("staging") == [done["id"]]
    conn = bo.mirror._conn
    state = mirror._state(conn)
    with store.writing(conn):  # as a mirror of the database before it was restored from a backup
        mirror._keep(conn, mirror.State(state.source, state.seq + 1000, state.facts, 0, 1))
        conn.execute("DELETE FROM facts")
    assert bo.search("staging") == [done["id"]]
    assert mirror._state(conn).seq == state.seq


def test_a_fact_changed_with_no_change_recorded_makes_the_mirror_anew(members, postgres_url):
    ana, bo = members
    [done] = ana.write(insert("deploy", "Deploys go through staging."))
    assert bo.search("staging") == [done["id"]]
    # The tables' owner (this test's role) adds a fact by hand, recording no change.
    owner = postgres.connect(postgres_url)
    with owner.transaction():
        owner.execute(
            "INSERT INTO facts (project, id, topic, kind, text, date, created, updated, confirmed, changed_by, words)"
            " VALUES (%s, 99, 'cache', 'state', 'Caches live in redis.', '2026-12-01', 'x', 'x', 'x', 'owner',"
            " %s::tsvector)",
            (bo.project, "'cache':1A 'caches':12 'live':13 'in':14 'redis':15"),
        )
    owner.close()
    assert bo.search("redis") == [99]


def test_a_large_project_is_built_in_the_background_and_searched_on_the_team_meanwhile(
    members, monkeypatch, postgres_url
):
    ana, bo = members
    for number in range(5):
        ana.write(insert("deploy", f"Deploy step {number} goes through staging."))
    monkeypatch.setattr(mirror, "INLINE", 2)
    bo.mirror.url, bo.mirror.member = postgres_url, bo.name
    assert len(bo.search("staging")) > 0
    assert bo.mirror.missed == "being built"
    bo.mirror._builder.join(60)
    found = bo.search("staging")
    assert bo.mirror.missed is None and len(found) > 0
    with store.writing(bo.mirror._conn, lock=False) as conn:
        assert conn.execute("SELECT count(*) FROM facts").fetchone() == (5,)


def test_a_team_out_of_reach_is_said_as_before_the_mirror_changes_nothing(members):
    ana, bo = members
    ana.write(insert("deploy", "Deploys go through staging."))
    bo.search("staging")
    bo.team.close()
    with pytest.raises(postgres.Unreachable):
        lookup.search_team(bo.facts(), ["staging"], None, [], 8, bo.mirror)


def test_team_disconnect_takes_the_mirror_of_the_teams_words_away(tmp_path):
    from gate import config
    from gate.memory import team

    settings = config.load({"MEMORY_GATE_DB": str(tmp_path / "memory.db")}, cwd=tmp_path)
    (tmp_path / "memory.team.json").write_text('{"url": "postgresql://ana@127.0.0.1/team", "project": "p"}\n')
    words = mirror.Mirror(mirror.path_for(str(tmp_path / "memory.db")))
    words._open()
    words.close()
    assert (tmp_path / "memory.team-words.db").exists()
    assert team.disconnect(settings) == str(tmp_path / "memory.team.json")
    assert sorted(path.name for path in tmp_path.iterdir()) == []


def test_catching_up_while_two_members_write_misses_no_change(members, postgres_url, monkeypatch):
    import threading

    ana, bo = members
    builds = []
    fill = mirror._fill
    monkeypatch.setattr(mirror, "_fill", lambda conn, rows: builds.append(len(rows)) or fill(conn, rows))
    done = threading.Event()
    errors: list[BaseException] = []

    def writer(name: str) -> None:
        try:
            conn = postgres.connect(postgres_url)
            facts = TeamFacts(conn, bo.project, Who(name, f"session-{name}"))
            for number in range(40):
                with facts.transaction():
                    fact = facts.insert(
                        {"topic": "race", "kind": "event", "text": f"{name} wrote {number}", "date": "2026-12-01"},
                        stamp="2026-12-01T00:00:00Z",
                    )
                    if number % 3 == 0:
                        facts.delete(fact, {"topic": "race"}, stamp="2026-12-01T00:00:00Z")
            conn.close()
        except BaseException as error:  # the assertion below names it
            errors.append(error)

    threads = [threading.Thread(target=writer, args=(name,)) for name in ("cy", "di")]
    for thread in threads:
        thread.start()
    facts = bo.facts()
    caught = 0
    while any(thread.is_alive() for thread in threads) or not done.is_set():
        if not any(thread.is_alive() for thread in threads):
            done.set()  # once more after the last write
        assert bo.mirror.index(facts) is not None
        caught += 1
    assert errors == [] and caught > 2
    assert len(builds) == 1  # caught up change by change, never rebuilt for a change it missed
    team = sorted(row[0] for row in bo.team.execute("SELECT id FROM facts WHERE project = %s", (bo.project,)))
    bo.team.rollback()
    with store.writing(bo.mirror._conn, lock=False) as conn:
        assert sorted(row[0] for row in conn.execute("SELECT id FROM facts")) == team
    assert len(team) == 2 * (40 - 14)


def test_a_mirror_another_server_holds_for_long_is_passed_by_not_waited_for(members):
    ana, bo = members
    [done] = ana.write(insert("deploy", "Deploys go through staging."))
    assert bo.search("staging") == [done["id"]]
    other = store.connect(bo.mirror.path)  # another server of bo's, building the file anew
    other.execute("BEGIN IMMEDIATE")
    try:
        ana.search("deploy")
        ana.write({"op": "update", "id": done["id"], "text": "Deploys go through the canary."})
        started = time.monotonic()
        assert bo.search("canary") == [done["id"]]  # on the team's words, the file left as it is
        assert time.monotonic() - started < 3.0  # not the 5 s a ledger waits for its lock
        assert bo.mirror.missed is not None and "Busy" in bo.mirror.missed
        assert bo.mirror._conn is not None
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert bo.search("canary") == [done["id"]] and bo.mirror.missed is None


def test_a_mirror_another_server_is_making_is_left_to_it(members):
    import apsw

    ana, bo = members
    [done] = ana.write(insert("deploy", "Deploys go through staging."))
    maker = apsw.Connection(bo.mirror.path)  # another server of bo's, making the file this moment
    maker.execute("BEGIN IMMEDIATE")
    maker.execute("CREATE TABLE making (x)")
    try:
        assert bo.search("staging") == [done["id"]]  # on the team's words
        assert bo.mirror.missed is not None and "busy" in bo.mirror.missed.lower()
        assert os.path.exists(bo.mirror.path)  # not deleted under the server making it
    finally:
        maker.execute("ROLLBACK")
        maker.close()
    assert bo.search("staging") == [done["id"]] and bo.mirror.missed is None
