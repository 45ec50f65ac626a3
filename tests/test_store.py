import os
import stat
import threading

import apsw
import pytest

from gate.engine import health, store


def dump(conn):
    """Everything that defines the database: schema objects, pragmas, rows of every table."""
    schema = sorted(conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master"))
    tables = [
        name
        for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'facts_fts%'"
            " AND name NOT LIKE 'sqlite_%' AND sql NOT LIKE 'CREATE VIRTUAL%'"
        )
    ]
    rows = {name: sorted(conn.execute(f"SELECT * FROM {name}")) for name in tables}
    return schema, store.user_version(conn), rows


def test_fresh_database_is_at_the_latest_version(conn):
    assert store.user_version(conn) == store.latest_version() >= 1


def test_reapplying_the_schema_changes_nothing(file_conn, db_path, file_writer):
    file_writer.insert("deploy", "Deploys go through staging.")
    before = dump(file_conn)
    file_conn.close()
    again = store.connect(db_path)
    assert store.migrate(again) == store.latest_version()
    assert dump(again) == before
    again.close()


def test_upgrading_step_by_step_equals_a_fresh_database(tmp_path, monkeypatch):
    """Each section applied on its own (as an upgrade would) ends where a fresh file does."""
    steps = store.schema_steps()
    upgraded = store.connect(tmp_path / "fresh.db")  # all sections in one go
    stepwise = apsw.Connection(str(tmp_path / "stepwise.db"))
    stepwise.create_scalar_function("gate_cjk", lambda s: s, 1, deterministic=True)
    for count in range(1, len(steps) + 1):
        monkeypatch.setattr(store, "schema_steps", lambda source=None, n=count: steps[:n])
        store.migrate(stepwise)
        assert store.user_version(stepwise) == count
    assert dump(stepwise)[0] == dump(upgraded)[0]


def test_schema_sections_must_be_numbered_in_order():
    with pytest.raises(store.StoreError, match="numbered 1, 2, 3"):
        store.schema_steps("-- version 1: a\nSELECT 1;\n-- version 3: c\nSELECT 1;\n")


def test_a_newer_database_is_refused_with_the_mend(db_path):
    conn = store.connect(db_path)
    conn.execute("PRAGMA user_version = 999")
    conn.close()
    with pytest.raises(store.StoreError, match="upgrade memory-gate"):
        store.connect(db_path)


def test_new_files_and_folders_are_private(tmp_path):
    path = tmp_path / "a" / "b" / "memory.db"
    conn = store.connect(path)
    conn.execute("INSERT INTO meta VALUES ('k', 'v')")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "a").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(tmp_path / "a" / "b").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(str(path) + "-wal").st_mode) == 0o600
    conn.close()


def test_database_runs_in_wal_mode(file_conn):
    assert file_conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_without_create_a_missing_database_is_an_error(tmp_path):
    with pytest.raises(store.StoreError, match="no memory database"):
        store.connect(tmp_path / "missing.db", create=False)
    assert not (tmp_path / "missing.db").exists()


def test_a_writer_waits_for_another_instead_of_failing(db_path):
    first = store.connect(db_path)
    second = store.connect(db_path)
    first.execute("BEGIN IMMEDIATE")
    first.execute("INSERT INTO meta VALUES ('a', '1')")
    released = threading.Timer(0.3, lambda: first.execute("COMMIT"))
    released.start()
    second.execute("BEGIN IMMEDIATE")  # would raise BusyError without the busy timeout
    second.execute("INSERT INTO meta VALUES ('b', '2')")
    second.execute("COMMIT")
    released.join()
    assert sorted(second.execute("SELECT key FROM meta")) == [("a",), ("b",)]


def test_a_lock_held_too_long_is_a_busy_error(db_path):
    first = store.connect(db_path)
    second = store.connect(db_path, busy_ms=50)
    first.execute("BEGIN IMMEDIATE")
    with pytest.raises(apsw.BusyError):
        second.execute("BEGIN IMMEDIATE")
    first.execute("ROLLBACK")


def test_integrity_check_finds_a_damaged_word_index(file_conn, file_writer):
    file_writer.insert("deploy", "Deploys go through staging.")
    assert health.check_integrity(file_conn) == []
    # Index a word the facts table does not hold: index and content now disagree.
    file_conn.execute("INSERT INTO facts_fts (rowid, topic, text, cjk) VALUES (1, 'bogus', 'bogus', '')")
    assert health.check_integrity(file_conn)


def test_a_file_that_is_not_a_database_is_a_clear_error(tmp_path):
    path = tmp_path / "memory.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(store.StoreError, match="cannot open"):
        store.connect(path)


def test_upgrading_to_contexts_keeps_tool_calls_and_forgets_what_was_shown(tmp_path, monkeypatch):
    """Version 5 keys `shown` by context: an older database upgrades in place, its tool calls
    kept (agent NULL: the main agent), its session-wide shown rows dropped (those facts come
    back in full once, which is safe), and it ends as a fresh one does."""
    steps = store.schema_steps()
    path = tmp_path / "v4.db"
    monkeypatch.setattr(store, "schema_steps", lambda source=None: steps[:4])
    old = store.connect(path)
    old.execute("INSERT INTO sessions (id, started) VALUES ('s1', 'now')")
    old.execute("INSERT INTO turns (id, session, prompt_id, started) VALUES (1, 's1', 'p1', 'now')")
    old.execute("INSERT INTO tool_calls VALUES ('toolu_1', 1, 'mcp__memory__memory_search', 'now')")
    old.execute("INSERT INTO shown VALUES ('s1', 1, 1)")
    old.close()
    monkeypatch.undo()
    upgraded = store.connect(path)
    assert store.user_version(upgraded) == store.latest_version() >= 5
    assert list(upgraded.execute("SELECT id, turn, agent FROM tool_calls")) == [("toolu_1", 1, None)]
    assert list(upgraded.execute("SELECT * FROM shown")) == []
    assert dump(upgraded)[0] == dump(store.connect(tmp_path / "fresh.db"))[0]


def test_the_default_memory_folder_is_made_private_again_when_claude_code_made_it_wide(tmp_path):
    folder = tmp_path / "projects" / "-home-me-app" / "memory"
    folder.mkdir(parents=True, mode=0o755)
    folder.chmod(0o755)  # as Claude Code makes it for its own auto memory
    store.connect(folder / "memory.db").close()
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700


def test_a_folder_the_owner_chose_keeps_its_mode(tmp_path):
    folder = tmp_path / "shared"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    store.connect(folder / "memory.db").close()
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o755
