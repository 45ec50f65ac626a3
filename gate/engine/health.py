"""Whether a memory database is sound: SQLite's own integrity check and the word index's, each
problem naming what is damaged (the word index, which `memory-gate reindex` rebuilds from the
facts, or the database itself). Apart from gate.engine.store, which opens and changes a memory on
every turn: this is read by `memory-gate doctor`, and by gate.engine.store.diagnose when an error
needs its true cause found; never on the hooks' per-turn path.
"""

import apsw


def check_integrity(conn: apsw.Connection) -> list[str]:
    """Problems SQLite and the word index report; an empty list means healthy. Damage is the
    answer here, never an exception: each problem names what is damaged (the word index, which
    `memory-gate reindex` rebuilds from the facts, or the database itself). What keeps the check
    from running (a lock, a read-only file, the disk) is no damage: its apsw error is raised."""
    try:
        # Opening the word index reads its config: a damaged one fails here, and would fail
        # SQLite's whole integrity_check with it.
        conn.execute("SELECT rowid FROM facts_fts LIMIT 0")
    except _NOT_DAMAGE:
        raise
    except apsw.Error as error:
        return [f"word index: {error}", *_check_tables(conn)]
    try:
        problems = [row[0] for row in conn.execute("PRAGMA integrity_check") if row[0] != "ok"]
    except _NOT_DAMAGE:
        raise
    except apsw.Error as error:
        return [f"database: {error}"]
    try:
        conn.execute("INSERT INTO facts_fts (facts_fts, rank) VALUES ('integrity-check', 1)")
    except _NOT_DAMAGE:
        raise
    except apsw.Error as error:
        problems.append(f"word index: {error}")
    return problems


# What keeps a check from running says nothing about damage: raised, for the caller to name.
_NOT_DAMAGE = (apsw.BusyError, apsw.ReadOnlyError, apsw.IOError, apsw.FullError)


def _check_tables(conn: apsw.Connection) -> list[str]:
    """SQLite's integrity check of each ordinary table, one at a time (the whole check cannot
    run while a virtual table cannot be opened)."""
    problems = []
    try:
        tables = [
            row[0]
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'"
            )
        ]
        for table in tables:
            problems += [
                f"database: {row[0]}" for row in conn.execute(f'PRAGMA integrity_check("{table}")') if row[0] != "ok"
            ]
    except apsw.Error as error:
        problems.append(f"database: {error}")
    return problems
