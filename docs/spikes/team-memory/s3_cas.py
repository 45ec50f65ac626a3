"""Question 3: two writers, one fact: compare-and-set on `rev`, the refusal's news, change + audit
in one transaction, and which isolation level that needs.

    .venv/bin/python spike/s3_cas.py
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pg  # noqa: E402

SCHEMA = """
CREATE TABLE facts (
    project    text NOT NULL,
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    text       text NOT NULL,
    rev        integer NOT NULL DEFAULT 1,
    updated    timestamptz NOT NULL DEFAULT now(),
    updated_by text NOT NULL
);
CREATE TABLE audit (
    seq     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project text NOT NULL,
    fact    bigint NOT NULL,
    action  text NOT NULL CHECK (action IN ('insert', 'update', 'delete', 'keep')),
    rev     integer NOT NULL,
    before  text,
    after   text,
    member  text NOT NULL,
    at      timestamptz NOT NULL DEFAULT now()
);
"""

# One round trip: lock the fact and read its newest committed state (FOR UPDATE waits for a
# concurrent writer and then returns the row as that writer left it), update it only if it is
# still at the revision the turn read, and write the audit row from the locked "before".
CAS = """
WITH current AS (
    SELECT id, rev, text, updated, updated_by FROM facts WHERE project = %(project)s AND id = %(id)s FOR UPDATE
), changed AS (
    UPDATE facts f SET text = %(text)s, rev = f.rev + 1, updated = now(), updated_by = %(member)s
    FROM current c WHERE f.id = c.id AND c.rev = %(rev)s
    RETURNING f.id, f.rev, f.updated
), logged AS (
    INSERT INTO audit (project, fact, action, rev, before, after, member, at)
    SELECT %(project)s, ch.id, 'update', ch.rev, c.text, %(text)s, %(member)s, ch.updated
    FROM changed ch JOIN current c USING (id)
    RETURNING seq
)
SELECT (SELECT rev FROM changed) AS new_rev, (SELECT seq FROM logged) AS audit_seq,
       c.rev, c.text, c.updated_by, c.updated
FROM current c
"""

# The tempting one-statement version without the lock: the report comes from the statement's
# snapshot, taken before it waited for the other writer.
NAIVE = """
WITH changed AS (
    UPDATE facts SET text = %(text)s, rev = rev + 1, updated = now(), updated_by = %(member)s
    WHERE project = %(project)s AND id = %(id)s AND rev = %(rev)s RETURNING id, rev
)
SELECT (SELECT rev FROM changed) AS new_rev, f.rev, f.text, f.updated_by, f.updated
FROM facts f WHERE f.project = %(project)s AND f.id = %(id)s
"""


def connect(url: str, member: str) -> psycopg.Connection:
    return psycopg.connect(url, application_name=member)


def wait_until_blocked(watcher: psycopg.Connection, pid: int) -> None:
    """Until backend `pid` waits on a lock (the state the race needs), polled, bounded."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        row = watcher.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()
        if row and row[0] == "Lock":
            return
        time.sleep(0.005)
    raise SystemExit(f"backend {pid} never waited for the lock")


def race(url: str, watcher, statement: str, fact: int, label: str) -> None:
    """A updates fact and holds its transaction open; B's write of the same revision starts, waits
    for A's row lock; A commits; what does B hear?"""
    rev = watcher.execute("SELECT rev FROM facts WHERE id = %s", (fact,)).fetchone()[0]
    a, b = connect(url, "alice"), connect(url, "bob")
    a.execute(CAS, dict(project="p", id=fact, rev=rev, text=f"alice's text at rev {rev + 1}", member="alice@laptop")).fetchone()
    heard = {}

    def bob() -> None:
        heard["row"] = b.execute(statement, dict(project="p", id=fact, rev=rev, text="bob's text", member="bob@desk")).fetchone()
        b.commit()

    thread = threading.Thread(target=bob)
    thread.start()
    wait_until_blocked(watcher, b.info.backend_pid)
    a.commit()
    thread.join(10)
    row = heard["row"]
    now_rev, now_text = watcher.execute("SELECT rev, text FROM facts WHERE id = %s", (fact,)).fetchone()
    print(f"  {label}: bob wrote rev {rev} while alice held it -> updated: {row[0] is not None}; "
          f"bob hears rev {row[1 if statement is NAIVE else 2]}, text {row[2 if statement is NAIVE else 3]!r}, "
          f"by {row[3 if statement is NAIVE else 4]!r}; the fact is now rev {now_rev} {now_text!r}")
    a.close(), b.close()


def main() -> None:
    with pg.Server() as server:
        url = server.url()
        with psycopg.connect(url, autocommit=True) as watcher:
            watcher.execute(SCHEMA)
            ids = [watcher.execute("INSERT INTO facts (project, text, updated_by) VALUES ('p', %s, 'setup') RETURNING id",
                                   (f"fact {n} at rev 1",)).fetchone()[0] for n in range(4)]
            fact = ids[0]

            print("1. Two members read the fact at rev 1; alice writes first, then bob (READ COMMITTED)")
            a, b = connect(url, "alice"), connect(url, "bob")
            for who, conn in (("alice", a), ("bob", b)):
                print(f"  {who} reads:", conn.execute("SELECT id, rev, text FROM facts WHERE id = %s", (fact,)).fetchone())
                conn.commit()
            row = a.execute(CAS, dict(project="p", id=fact, rev=1, text="alice's new text", member="alice@laptop")).fetchone()
            a.commit()
            print(f"  alice: new rev {row[0]}, audit row {row[1]}")
            started = time.perf_counter()
            row = b.execute(CAS, dict(project="p", id=fact, rev=1, text="bob's new text", member="bob@desk")).fetchone()
            took = 1000 * (time.perf_counter() - started)
            b.rollback()
            print(f"  bob: refused (new_rev {row[0]}): fact {fact} is at rev {row[2]} since {row[5]:%H:%M:%S.%f} "
                  f"by {row[4]!r}: {row[3]!r}  [one round trip, {took:.1f} ms]")
            a.close(), b.close()

            print("2. The race: bob's write arrives while alice's transaction still holds the row")
            race(url, watcher, NAIVE, ids[1], "naive CTE (no lock)")
            race(url, watcher, CAS, ids[2], "CAS with FOR UPDATE")

            print("3. The same under REPEATABLE READ")
            a, b = connect(url, "alice"), connect(url, "bob")
            b.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            b.execute("SELECT rev FROM facts WHERE id = %s", (ids[3],)).fetchone()  # bob's snapshot
            a.execute(CAS, dict(project="p", id=ids[3], rev=1, text="alice", member="alice@laptop")).fetchone()
            a.commit()
            try:
                b.execute(CAS, dict(project="p", id=ids[3], rev=2, text="bob", member="bob@desk")).fetchone()
                print("  bob, even with the right rev: accepted")
            except psycopg.errors.SerializationFailure as error:
                print(f"  bob, even with the current rev 2: {type(error).__name__} (SQLSTATE {error.sqlstate}): {str(error).strip()}")
            b.rollback()
            a.close(), b.close()

            print("4. A change and its audit row: one transaction")
            a = connect(url, "alice")
            rev = watcher.execute("SELECT rev FROM facts WHERE id = %s", (fact,)).fetchone()[0]
            a.execute(CAS, dict(project="p", id=fact, rev=rev, text="alice again", member="alice@laptop")).fetchone()
            seen = watcher.execute("SELECT (SELECT rev FROM facts WHERE id = %s), (SELECT count(*) FROM audit WHERE fact = %s)", (fact, fact)).fetchone()
            print(f"  before commit another connection sees rev {seen[0]}, {seen[1]} audit rows")
            a.commit()
            seen = watcher.execute("SELECT (SELECT rev FROM facts WHERE id = %s), (SELECT count(*) FROM audit WHERE fact = %s)", (fact, fact)).fetchone()
            print(f"  after commit: rev {seen[0]}, {seen[1]} audit rows")
            try:
                # The audit row fails (member NULL): the change goes with it.
                a.execute(CAS, dict(project="p", id=fact, rev=seen[0], text="lost?", member=None)).fetchone()
                a.commit()
            except psycopg.errors.NotNullViolation as error:
                a.rollback()
                print(f"  audit insert failed ({type(error).__name__}): fact is still",
                      watcher.execute("SELECT rev, text FROM facts WHERE id = %s", (fact,)).fetchone())
            history = watcher.execute("SELECT rev, member, before, after FROM audit WHERE fact = %s ORDER BY seq", (fact,)).fetchall()
            print("  audit of the fact:", history)
            a.close()

            print("5. Inserts never clash: two open transactions insert at once")
            a, b = connect(url, "alice"), connect(url, "bob")
            b.execute("SET lock_timeout = '1s'")
            x = a.execute("INSERT INTO facts (project, text, updated_by) VALUES ('p', 'a', 'alice') RETURNING id").fetchone()[0]
            y = b.execute("INSERT INTO facts (project, text, updated_by) VALUES ('p', 'b', 'bob') RETURNING id").fetchone()[0]
            b.commit(), a.commit()
            print(f"  alice got id {x}, bob id {y} while alice's transaction was open; no wait, no clash")
            a.close(), b.close()


if __name__ == "__main__":
    main()
