"""The database itself: opening it, its schema (schema.sql), how its index cuts words, a fact as a row.

Everything above reaches SQLite through here: `store` opens a memory, applies schema.sql's
numbered sections and takes write transactions; `files` keeps its files on disk private and
finds a planted one before memory writes into it; `health` checks that a memory is sound;
`tokens` cuts and folds words exactly as the FTS5 index does. This is the seam a second storage engine plugs into: `postgres` opens a team's
memory on PostgreSQL and applies schema-postgres.sql, `teamwords` stores a fact's words as the
SQLite index holds them and ranks them by FTS5's own bm25, `teamroles` says what a member's role
may do; `facts.LocalFacts` and `teamfacts.TeamFacts` are
the five operations a change set (gate.memory.changeset) changes facts with, on either engine
(docs/team-memory.md says what is built and what is not).

May import: the ground floor (gate/*.py), apsw, and psycopg in `postgres` alone, when a team
database is opened. On the hooks' path: nothing heavy here.
"""
