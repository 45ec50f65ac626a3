import json

import pytest

from gate.engine import store
from gate.memory import audit, chain, changeset, history, ledger, undo
from gate.search import embeddings, fulltext as search, vectors
from gate.serve import tools


def entries(db_path):
    return [json.loads(line) for line in audit.log_path(db_path).read_text().splitlines()]


def name_of(entry):
    return history.entry_name(entry["write"], entry["id"])


def fact_row(conn, fact):
    return conn.execute("SELECT topic, kind, text, date, created, rev FROM facts WHERE id = ?", (fact,)).fetchone()


@pytest.fixture
def memory(file_conn, file_writer, db_path):
    """Fact a inserted, then updated; fact b inserted, then deleted; each by a turn with words."""
    ledger.open_turn(file_conn, "s-undo", "p1", "remember deploys and the DB trap")
    file_writer.caller = tools.Caller("s-undo")
    a = file_writer.insert("deploy", "Deploys go through staging.")
    b = file_writer.insert("database", "Reset the test DB before migrations.", kind="trap")
    ledger.open_turn(file_conn, "s-undo", "p2", "we deploy from prod now; the DB trap is gone")
    file_writer.search("deploy DB")
    file_writer.write([{"op": "update", "id": a, "text": "Deploys go through prod.", "kind": "decision"},
                       {"op": "delete", "id": b}])
    names = [name_of(entry) for entry in entries(db_path)]
    return {"a": a, "b": b, "insert_a": names[0], "insert_b": names[1], "update_a": names[2], "delete_b": names[3]}


def run_undo(conn, db_path, name, **extra):
    return undo.undo(conn, audit.log_path(db_path), name, command=f"memory-gate undo {name}", **extra)


def test_undo_of_an_update_puts_the_previous_version_back_and_is_logged(file_conn, db_path, memory):
    a = memory["a"]
    done = run_undo(file_conn, db_path, memory["update_a"])
    assert done.op == "update" and done.fact == a
    topic, kind, text, _, _, rev = fact_row(file_conn, a)
    assert (topic, kind, text, rev) == ("deploy", "state", "Deploys go through staging.", 3)
    line = entries(db_path)[-1]
    assert line["op"] == "update" and line["before"]["text"] == "Deploys go through prod."
    assert line["after"]["text"] == "Deploys go through staging."
    assert line["session"] == changeset.CLI_SESSION and line["words"] == f"memory-gate undo {memory['update_a']}"
    assert line["undoes"].startswith(memory["update_a"].split(":")[0]) and line["undoes"].endswith(f":{a}")
    assert audit.is_committed(file_conn, line["write"]) and audit.check(file_conn, audit.log_path(db_path)).ok
    assert name_of(line) == done.entry
    assert search.by_words(file_conn, "staging") == [a]


def test_undo_of_a_delete_brings_the_fact_back_under_its_id(file_conn, db_path, memory):
    b = memory["b"]
    created = entries(db_path)[1]["time"]
    done = run_undo(file_conn, db_path, memory["delete_b"])
    assert done.op == "insert"
    topic, kind, text, _, was_created, rev = fact_row(file_conn, b)
    assert (topic, kind, text) == ("database", "trap", "Reset the test DB before migrations.")
    # Created when it first was; a revision above any a session could have been shown.
    assert was_created == created and rev == 2
    assert search.by_words(file_conn, "migrations") == [b]
    line = entries(db_path)[-1]
    assert line["op"] == "insert" and line["id"] == b and line["bookkeeping"]["rev"] == 2


def test_undo_of_an_insert_deletes_the_fact(file_conn, db_path, file_writer):
    fact = file_writer.insert("cache", "The cache lives in Redis.")
    done = run_undo(file_conn, db_path, name_of(entries(db_path)[-1]))
    assert done.op == "delete" and fact_row(file_conn, fact) is None
    assert entries(db_path)[-1]["op"] == "delete" and entries(db_path)[-1]["before"]["text"] == "The cache lives in Redis."


def test_undoing_the_undo_redoes_the_change(file_conn, db_path, memory):
    first = run_undo(file_conn, db_path, memory["update_a"])
    run_undo(file_conn, db_path, first.entry)
    assert fact_row(file_conn, memory["a"])[2] == "Deploys go through prod."


def test_an_older_change_is_refused_naming_the_later_ones(file_conn, db_path, memory):
    before = list(file_conn.execute("SELECT * FROM facts ORDER BY id"))
    lines = audit.log_path(db_path).read_text()
    with pytest.raises(undo.CannotUndo) as refused:
        run_undo(file_conn, db_path, memory["insert_a"])
    message = str(refused.value)
    assert f"cannot undo {memory['insert_a']}: fact {memory['a']} changed after it ({memory['update_a']} (update, " in message
    assert f"Undo that one first (`memory-gate undo {memory['update_a']}`)" in message
    assert list(file_conn.execute("SELECT * FROM facts ORDER BY id")) == before
    assert audit.log_path(db_path).read_text() == lines, "a refused undo logs nothing"


def test_several_later_changes_are_named_newest_first(file_conn, db_path, memory):
    newest = run_undo(file_conn, db_path, memory["update_a"]).entry
    message = str(pytest.raises(undo.CannotUndo, run_undo, file_conn, db_path, memory["insert_a"]).value)
    assert message.index(newest) < message.index(memory["update_a"])
    assert f"`memory-gate undo {newest}` is the newest" in message


def test_a_change_that_never_committed_is_not_undone(file_conn, db_path, memory):
    audit.append(audit.log_path(db_path), [{"time": "2026-01-01T00:00:00Z", "write": "abcdef0123456789", "op": "delete",
                                            "id": memory["a"], "before": {}}])
    with pytest.raises(undo.CannotUndo, match="never committed"):
        run_undo(file_conn, db_path, f"abcdef01:{memory['a']}")


def test_an_unknown_change_names_where_to_copy_one(file_conn, db_path, memory):
    with pytest.raises(undo.CannotUndo, match=r"no change deadbeef:1: copy the entry from `memory-gate log --fact 1`"):
        run_undo(file_conn, db_path, "deadbeef:1")


def test_an_ambiguous_prefix_asks_for_more(file_conn, db_path, file_writer):
    fact = file_writer.insert("x", "one")
    # Two committed writes of this fact whose ids share their first 8 characters.
    for write_id, text in (("aaaaaaaa11", "two"), ("aaaaaaaa22", "three")):
        file_conn.execute("INSERT INTO writes (id, session, turn, seq, digest, changes, answer, at)"
                          " VALUES (?, 's', 0, 0, '', 1, '{}', '')", (write_id,))
        audit.append(audit.log_path(db_path), [{"write": write_id, "op": "update", "id": fact,
                                                "before": {}, "after": {"text": text}}])
    with pytest.raises(undo.CannotUndo, match="more than one change"):
        run_undo(file_conn, db_path, f"aaaaaaaa:{fact}")


def test_a_fact_changed_behind_the_log_is_not_overwritten(file_conn, db_path, memory):
    file_conn.execute("UPDATE facts SET text = 'edited by hand' WHERE id = ?", (memory["a"],))
    with pytest.raises(undo.CannotUndo, match="no longer reads as that change left it"):
        run_undo(file_conn, db_path, memory["update_a"])
    assert fact_row(file_conn, memory["a"])[2] == "edited by hand"


def test_a_credential_is_never_put_back(file_conn, db_path, memory):
    """A fact stored before the credential check existed stays out of memory once deleted."""
    token = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
    path = audit.log_path(db_path)
    lines = path.read_text().splitlines()
    last = json.loads(lines[-1])
    last["before"]["text"] = f"the bot token is {token}"
    # Sealed again, as a line memory-gate wrote: the chain proves it, the credential check refuses it.
    path.write_text("\n".join(lines[:-1] + [chain.seal(last, last["prev"])[0]]) + "\n")
    message = str(pytest.raises(undo.CannotUndo, run_undo, file_conn, db_path, memory["delete_b"]).value)
    assert "GitHub token" in message and token not in message
    assert fact_row(file_conn, memory["b"]) is None


def test_the_log_line_is_on_disk_before_the_commit(file_conn, db_path, memory, monkeypatch):
    """When write.log cannot be written, the undo does not happen."""
    def fail(path, lines):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(audit, "append", fail)
    with pytest.raises(OSError):
        run_undo(file_conn, db_path, memory["update_a"])
    assert fact_row(file_conn, memory["a"])[2] == "Deploys go through prod."
    assert file_conn.execute("SELECT count(*) FROM turns WHERE session = 'cli'").fetchone()[0] == 0


def test_undo_keeps_the_vectors_in_step(file_conn, db_path, memory, fake_embeddings):
    if not store.load_vectors(file_conn):
        pytest.skip("sqlite-vec cannot be loaded here")
    endpoint = embeddings.Endpoint(fake_embeddings.url, "bge-m3", write_timeout=5.0)
    run_undo(file_conn, db_path, memory["delete_b"], endpoint=endpoint)
    b = memory["b"]
    # The restored fact has the vector of its text, nothing waits for one.
    assert b not in {fact for fact, _ in vectors.waiting(file_conn, limit=1000)}
    assert file_conn.execute("SELECT count(*) FROM facts_vec WHERE rowid = ?", (b,)).fetchone()[0] == 1
    query = endpoint.embed(["Reset the test DB before migrations."], role="query", timeout=5.0)
    assert vectors.nearest(file_conn, query, max_distance=0.5, limit=3)[0] == b
    undone = run_undo(file_conn, db_path, history.entry_name(entries(db_path)[-1]["write"], b), endpoint=endpoint)
    assert undone.op == "delete"
    assert file_conn.execute("SELECT count(*) FROM facts_vec WHERE rowid = ?", (b,)).fetchone()[0] == 0
