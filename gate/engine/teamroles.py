"""What a member's database role may do in a team's memory, and what would be too much.

A member's role reads and changes facts and adds changes to the record, each change then
carrying the role (schema-postgres.sql section 7); it never rewrites or deletes the record,
never truncates a table, and never owns the tables (their owner is not bound by the record's
row-level security). `grants` is the SQL the database's owner runs for a member, printable
(`memory-gate team grant ROLE --sql`); `too_broad` is what doctor finds beyond it.

Projects are kept apart by database, not by row: a team whose projects others must not read
has a database of its own, and its members' roles CONNECT to that one only (docs/team-memory.md
says why row-level security on facts is not used: it would keep the words index from members'
searches). Never imports psycopg: it takes a connection postgres.connect opened.
"""

from __future__ import annotations

import re

from gate.engine import postgres

# Each table a member's writes touch, and the rights they need on it. `changes` is added to,
# and its line set once (UPDATE of that column alone).
MEMBER_RIGHTS: dict[str, tuple[str, ...]] = {
    "projects": ("SELECT", "INSERT", "UPDATE"),
    "facts": ("SELECT", "INSERT", "UPDATE", "DELETE"),
    "changes": ("SELECT", "INSERT"),
    "lexemes": ("SELECT", "INSERT", "UPDATE", "DELETE"),
    "vector_spaces": ("SELECT", "INSERT", "UPDATE", "DELETE"),
    "facts_to_embed": ("SELECT", "INSERT", "DELETE"),
    "facts_vec": ("SELECT", "INSERT", "UPDATE", "DELETE"),  # when pgvector made it; UPDATE: its bits
    "members": ("SELECT",),
    "memory_gate_schema": ("SELECT",),
}
CHANGES_COLUMNS = ("line",)  # UPDATE on these columns of changes only
FUNCTIONS = ("memory_gate_claim(text, name)",)
# Rights on the record no member may hold: they rewrite or erase it.
RECORD_TOO_MUCH = ("UPDATE", "DELETE", "TRUNCATE")

_ROLE = re.compile(r"^[a-z_][a-z0-9_$]{0,62}$")


def quoted(role: str) -> str:
    """A role name as SQL names it: bare when PostgreSQL would fold it alike, else quoted."""
    return role if _ROLE.match(role) else '"' + role.replace('"', '""') + '"'


def grants(role: str, *, vectors: bool = True) -> list[str]:
    """The statements that set `role` up as a member: no more than MEMBER_RIGHTS."""
    who, schema = quoted(role), postgres.SCHEMA
    sql = [f"GRANT USAGE ON SCHEMA {schema} TO {who}"]
    for table, rights in MEMBER_RIGHTS.items():
        if table == "facts_vec" and not vectors:
            continue
        sql.append(f"GRANT {', '.join(rights)} ON {schema}.{table} TO {who}")
    sql.append(f"GRANT UPDATE ({', '.join(CHANGES_COLUMNS)}) ON {schema}.changes TO {who}")
    sql += [f"GRANT EXECUTE ON FUNCTION {schema}.{function} TO {who}" for function in FUNCTIONS]
    return sql


def grant(conn, role: str) -> list[str]:
    """Run `grants` for `role` in one transaction (as the tables' owner); the statements run."""
    vectors = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (f"{postgres.SCHEMA}.facts_vec",)).fetchone()[0]
    sql = grants(role, vectors=vectors)
    with conn.transaction():
        if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
            raise postgres.StoreError(
                f"the team database has no role {role}: have its owner run "
                f"CREATE ROLE {quoted(role)} LOGIN first, then grant again"
            )
        for statement in sql:
            conn.execute(statement)
    conn.commit()  # the block above is a savepoint when the caller's reads began a transaction
    return sql


def is_owner(conn) -> bool:
    """Whether the connection's role owns memory-gate's tables (or is a superuser)."""
    return bool(
        conn.execute(
            "SELECT pg_has_role(current_user, relowner, 'MEMBER') FROM pg_class WHERE oid = %s::regclass",
            (f"{postgres.SCHEMA}.changes",),
        ).fetchone()[0]
    )


def too_broad(conn) -> list[tuple[str, str]]:
    """What the connection's role may do beyond a member's rights that lets it rewrite the
    record or bypass its rules: (what, the mend). None for the tables' owner, whose role it is."""
    role = conn.execute("SELECT current_user").fetchone()[0]
    found: list[tuple[str, str]] = []
    attributes = conn.execute("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user").fetchone()
    if attributes and attributes[1] and not attributes[0]:
        found.append(
            (
                f"the role {role} bypasses row-level security, so it may rewrite the team's record of changes",
                f"have the database's owner run ALTER ROLE {quoted(role)} NOBYPASSRLS",
            )
        )
    schema = postgres.SCHEMA
    too_much = [
        right
        for right in RECORD_TOO_MUCH
        if conn.execute("SELECT has_table_privilege(current_user, %s, %s)", (f"{schema}.changes", right)).fetchone()[0]
    ]
    if too_much:
        found.append(
            (
                f"the role {role} may {', '.join(too_much)} the team's record of changes ({schema}.changes), "
                "so it may rewrite or erase it",
                f"have the database's owner run REVOKE {', '.join(too_much)} ON {schema}.changes FROM {quoted(role)}, "
                f"then `memory-gate team grant {role}`",
            )
        )
    for table in MEMBER_RIGHTS:
        if table == "changes" or conn.execute("SELECT to_regclass(%s)", (f"{schema}.{table}",)).fetchone()[0] is None:
            continue
        if conn.execute("SELECT has_table_privilege(current_user, %s, 'TRUNCATE')", (f"{schema}.{table}",)).fetchone()[
            0
        ]:
            found.append(
                (
                    f"the role {role} may TRUNCATE {schema}.{table}, which no trigger sees",
                    f"have the database's owner run REVOKE TRUNCATE ON {schema}.{table} FROM {quoted(role)}",
                )
            )
    for table in ("members",):
        extra = [
            right
            for right in ("INSERT", "UPDATE", "DELETE")
            if conn.execute(
                "SELECT has_table_privilege(current_user, %s, %s)", (f"{schema}.{table}", right)
            ).fetchone()[0]
        ]
        if extra:
            found.append(
                (
                    f"the role {role} may {', '.join(extra)} {schema}.{table}, so it may write under another member's name",
                    f"have the database's owner run REVOKE {', '.join(extra)} ON {schema}.{table} FROM {quoted(role)}",
                )
            )
    return found
