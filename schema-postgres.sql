-- memory-gate on PostgreSQL: the one place a team database's schema is written.
--
-- gate/engine/postgres.py applies this file when it opens a team database, as gate/engine/store.py
-- applies schema.sql to a local one: each "-- version N: ..." section runs once, in order, inside
-- one transaction, and memory_gate_schema records the last section applied. To change the schema,
-- append a section; never edit one that has been released. A "-- template NAME: ..." section is
-- handed out with its {placeholders} filled in, for a table whose shape is only known later.
--
-- What lives here is what a team shares: the facts of many projects, each kept apart by
-- `project`, and the record of every change, which is to a team what write.log is to one owner.
-- Each member's turn ledger (sessions, turns, what was read and shown) stays in the member's
-- local SQLite file, so that hooks never wait on the network.
--
-- Words are folded in Python by gate/engine/tokens.py, the very code the SQLite engine's index
-- uses, and stored as a tsvector: PostgreSQL's own parsers and dictionaries would fold
-- otherwise (and `unaccent` is a contrib extension a server may not have), so the same text
-- gives the same words on both engines.

-- version 1: projects, facts and their words, the record of changes

CREATE TABLE memory_gate_schema (
    -- One row: the last section applied.
    version integer NOT NULL
);
INSERT INTO memory_gate_schema (version) VALUES (0);

CREATE TABLE projects (
    id        integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- What every member's memory-gate names the project by (`memory-gate team connect`).
    key       text NOT NULL UNIQUE CHECK (length(trim(key)) BETWEEN 1 AND 200),
    -- The last fact id handed out: ids are the project's own, never reused after a delete, and
    -- taken under this row's lock, so two members' inserts wait for each other a moment, never clash.
    last_fact bigint NOT NULL DEFAULT 0,
    created   text NOT NULL
);

CREATE TABLE facts (
    project   integer NOT NULL REFERENCES projects (id),
    id        bigint NOT NULL,
    -- The same checks as schema.sql's, so that a fact one engine refuses the other refuses too.
    topic     text NOT NULL CHECK (length(btrim(topic)) BETWEEN 1 AND 100),
    kind      text NOT NULL CHECK (kind IN ('state', 'event', 'decision', 'trap')),
    text      text NOT NULL CHECK (length(btrim(text)) BETWEEN 1 AND 600),
    date      text NOT NULL CHECK (date ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'),
    created   text NOT NULL,
    updated   text NOT NULL,
    confirmed text NOT NULL,
    rev       integer NOT NULL DEFAULT 1,
    -- The member whose change made this revision, as the change record names them.
    changed_by text NOT NULL,
    -- The topic's and the text's words as gate/engine/tokens.py folds them, topic words weighted A.
    words     tsvector NOT NULL,
    PRIMARY KEY (project, id)
);
CREATE INDEX facts_words ON facts USING gin (words);
CREATE INDEX facts_by_updated ON facts (project, updated);
CREATE INDEX facts_by_kind ON facts (project, kind, updated);

CREATE TABLE changes (
    project   integer NOT NULL REFERENCES projects (id),
    seq       bigint GENERATED ALWAYS AS IDENTITY,
    fact      bigint NOT NULL,
    -- insert, update, delete; `before` and `after` hold the fact's fields around the change
    -- (null where there is none), so that history and undo need nothing else.
    op        text NOT NULL CHECK (op IN ('insert', 'update', 'delete')),
    rev       integer NOT NULL,
    before    jsonb,
    after     jsonb,
    member    text NOT NULL,
    session   text NOT NULL,
    -- Claude Code's tool_use_id of the write: a write sent twice is replayed, not applied twice.
    tool_use_id text,
    at        text NOT NULL,
    PRIMARY KEY (project, seq)
);
CREATE INDEX changes_by_fact ON changes (project, fact, seq);
CREATE INDEX changes_by_tool_use ON changes (project, tool_use_id) WHERE tool_use_id IS NOT NULL;

-- template vectors: a fact's vector (pgvector), {dimension} = the embedding model's
CREATE TABLE IF NOT EXISTS facts_vec (
    project   integer NOT NULL,
    id        bigint NOT NULL,
    embedding vector({dimension}) NOT NULL,
    PRIMARY KEY (project, id),
    FOREIGN KEY (project, id) REFERENCES facts (project, id) ON DELETE CASCADE
);
