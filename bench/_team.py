"""A team database for the benches: PostgreSQL on loopback (tests/postgres_server.py, pgserver's
binaries) and facts loaded into a fresh project of it under the ids the SQLite side gave them,
so that bench/team.py, bench/retrieval.py --team and bench/locomo.py --team compare like with like."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import postgres_server  # noqa: E402

from gate.engine import postgres, teamwords  # noqa: E402


def start(what: str = "the team rows"):
    """(server, connection), or None when pgserver is missing (said on stdout, naming `what`)."""
    found = postgres_server.binaries()
    if found is None:
        print(f"{what}: left out, pgserver is not installed (pip install -e '.[test]')")
        return None
    server = postgres_server.Server(found).start()
    return server, postgres.connect(server.url())


def stop(team) -> None:
    server, conn = team
    conn.close()
    server.stop()
    server.remove()


def load(conn, rows, key: str = "bench") -> int:
    """(id, topic, kind, text, date) rows as one fresh project's facts, in one COPY; its id.
    The counters' triggers (schema-postgres.sql section 2) count them once."""
    with conn.transaction():
        # One COPY of 100k facts runs past the members' 10 s statement time-out.
        conn.execute("SET LOCAL statement_timeout = 0")
        pid = conn.execute("INSERT INTO projects (key, created) VALUES (%s, '') RETURNING id",
                           (f"{key}-{uuid.uuid4().hex[:8]}",)).fetchone()[0]
        last = 0
        with conn.cursor() as cursor:
            with cursor.copy(
                "COPY facts (project, id, topic, kind, text, date, created, updated, confirmed, changed_by, words)"
                " FROM STDIN"
            ) as copy:
                for fact, topic, kind, text, date in rows:
                    copy.write_row((pid, fact, topic, kind, text, date, "", "", "", "bench", teamwords.words(topic, text)))
                    last = max(last, fact)
        conn.execute("UPDATE projects SET last_fact = %s WHERE id = %s", (last, pid))
    conn.execute("ANALYZE facts")
    conn.commit()
    return pid
