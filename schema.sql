-- memory-gate: the one place the database schema is written.
--
-- gate/engine/store.py applies this file when it opens a database. Each "-- version N: ..." section
-- runs once, in order, inside one transaction, and PRAGMA user_version records the last section
-- applied, so reopening an up-to-date database costs one pragma read. A fresh database and an
-- upgraded one run the same sections and end up the same. To change the schema, append a new
-- section; never edit one that has been released.
--
-- What is canonical: the rows of `facts`. The word index (facts_fts) and the vector index
-- (facts_vec, made from the "template vectors" section at the end once the embedding dimension
-- is known) are derived from them and `memory-gate reindex` rebuilds both. The ledger tables
-- hold the gate's state: which turn searched, wrote and read what.
--
-- A "-- template NAME: ..." section is not applied on open: gate/engine/store.py hands it out with its
-- {placeholders} filled in, for a table whose shape depends on something only known later.
--
-- Connections must register gate_cjk() (gate/engine/store.py does): the word index spells Chinese and
-- Japanese out one character per token in its `cjk` column, because unicode61 would otherwise
-- see a whole unspaced sentence as a single word (see gate/engine/tokens.py).

-- version 1: facts, their word index, the turn ledger

CREATE TABLE facts (
    -- AUTOINCREMENT: an id is never handed out twice, so write.log and history stay unambiguous
    -- after a delete.
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    topic     TEXT NOT NULL CHECK (length(trim(topic)) BETWEEN 1 AND 100),
    kind      TEXT NOT NULL CHECK (kind IN ('state', 'event', 'decision', 'trap')),
    text      TEXT NOT NULL CHECK (length(trim(text)) BETWEEN 1 AND 600),
    date      TEXT NOT NULL CHECK (date GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]'),
    created   TEXT NOT NULL,
    updated   TEXT NOT NULL,
    -- Last time a turn kept or updated the fact: what nobody has confirmed in a while may be stale.
    confirmed TEXT NOT NULL,
    -- Bumped by every update, so a session that was shown revision 1 sees revision 2 in full.
    rev       INTEGER NOT NULL DEFAULT 1
);

-- The word index reads its rows through this view, so that `rebuild` and `integrity-check`
-- derive the cjk column exactly as the triggers below do.
CREATE VIEW facts_indexed (id, topic, text, cjk) AS
    SELECT id, topic, text, gate_cjk(topic || ' ' || text) FROM facts;

CREATE VIRTUAL TABLE facts_fts USING fts5(
    topic, text, cjk,
    content = 'facts_indexed',
    content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 2'
);

CREATE TRIGGER facts_fts_insert AFTER INSERT ON facts BEGIN
    INSERT INTO facts_fts (rowid, topic, text, cjk)
    VALUES (new.id, new.topic, new.text, gate_cjk(new.topic || ' ' || new.text));
END;

CREATE TRIGGER facts_fts_delete AFTER DELETE ON facts BEGIN
    INSERT INTO facts_fts (facts_fts, rowid, topic, text, cjk)
    VALUES ('delete', old.id, old.topic, old.text, gate_cjk(old.topic || ' ' || old.text));
END;

CREATE TRIGGER facts_fts_update AFTER UPDATE OF topic, text ON facts BEGIN
    INSERT INTO facts_fts (facts_fts, rowid, topic, text, cjk)
    VALUES ('delete', old.id, old.topic, old.text, gate_cjk(old.topic || ' ' || old.text));
    INSERT INTO facts_fts (rowid, topic, text, cjk)
    VALUES (new.id, new.topic, new.text, gate_cjk(new.topic || ' ' || new.text));
END;

-- A fact's subject says more than a word in its text: rank matches in the topic five times higher.
INSERT INTO facts_fts (facts_fts, rank) VALUES ('rank', 'bm25(5.0, 1.0, 1.0)');

-- How many facts hold each word: search weighs the terms a loose match covers by it.
CREATE VIRTUAL TABLE facts_vocab USING fts5vocab(facts_fts, 'row');

-- One row per agent session: Claude Code's session_id, or an id the MCP server made up for
-- itself when nothing told it which session it serves. `seq` counts the session's events
-- (prompts, searches, writes), so a write delivered twice with nothing in between is recognised.
CREATE TABLE sessions (
    id      TEXT PRIMARY KEY,
    started TEXT NOT NULL,
    seq     INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

-- One row per turn: opened by the UserPromptSubmit hook (with Claude Code's prompt_id and the
-- owner's words), or by the server itself when no hook runs, in which case a turn lasts from one
-- accepted write to the next.
CREATE TABLE turns (
    id        INTEGER PRIMARY KEY,
    session   TEXT NOT NULL REFERENCES sessions (id),
    prompt_id TEXT,
    prompt    TEXT,
    started   TEXT NOT NULL,
    searched  INTEGER NOT NULL DEFAULT 0,
    wrote     INTEGER NOT NULL DEFAULT 0,
    -- Times the answer was held back because the gate was unmet.
    holds     INTEGER NOT NULL DEFAULT 0,
    -- How the turn's answer went out: 'met', or 'released' unmet because holding longer would
    -- have wedged the owner's agent. NULL while the turn runs.
    outcome   TEXT CHECK (outcome IN ('met', 'released')),
    UNIQUE (session, prompt_id)
);
CREATE INDEX turns_by_session ON turns (session, id);

-- Facts a turn's searches returned, and whether a write has answered for each since.
-- No foreign key on fact: another session may delete a fact this turn read.
CREATE TABLE reads (
    turn     INTEGER NOT NULL REFERENCES turns (id) ON DELETE CASCADE,
    fact     INTEGER NOT NULL,
    answered INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (turn, fact)
) WITHOUT ROWID;

-- Facts a session has been shown in full (at which revision), until its context is compacted
-- or cleared: such a fact comes back as its id only.
CREATE TABLE shown (
    session TEXT NOT NULL,
    fact    INTEGER NOT NULL,
    rev     INTEGER NOT NULL,
    PRIMARY KEY (session, fact)
) WITHOUT ROWID;

-- tool_use_id -> turn, written by the PreToolUse hook: the MCP server finds the turn of a call
-- from the id Claude Code puts in the request's _meta (its own session id env var can be wrong).
CREATE TABLE tool_calls (
    id   TEXT PRIMARY KEY,
    turn INTEGER NOT NULL REFERENCES turns (id) ON DELETE CASCADE,
    tool TEXT NOT NULL,
    at   TEXT NOT NULL
) WITHOUT ROWID;

-- Every accepted write. Its id is stamped on the write's lines in write.log, which are written
-- before the transaction commits: a log line whose write is missing here never committed.
CREATE TABLE writes (
    id          TEXT PRIMARY KEY,
    session     TEXT NOT NULL,
    turn        INTEGER NOT NULL,
    seq         INTEGER NOT NULL,
    tool_use_id TEXT UNIQUE,
    digest      TEXT NOT NULL,
    -- How many lines the write put in write.log (one per change), for checking the log.
    changes     INTEGER NOT NULL,
    answer      TEXT NOT NULL,
    at          TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX writes_by_session ON writes (session, seq);

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

-- version 2: facts waiting for a vector

-- Every fact whose vector is missing or out of date: a new fact, or one whose topic or text
-- changed. gate/search/vectors.py stores a vector and takes the id off this list in the transaction
-- that changed the fact, when the embeddings endpoint answered in time; otherwise a later write
-- or `memory-gate reindex` does. The triggers keep the list true on any connection, including
-- ones that never load sqlite-vec, so a vector the list names is never trusted by search.
CREATE TABLE facts_to_embed (
    id INTEGER PRIMARY KEY
);

CREATE TRIGGER facts_to_embed_insert AFTER INSERT ON facts BEGIN
    INSERT OR IGNORE INTO facts_to_embed (id) VALUES (new.id);
END;

CREATE TRIGGER facts_to_embed_update AFTER UPDATE OF topic, text ON facts
WHEN old.topic IS NOT new.topic OR old.text IS NOT new.text BEGIN
    INSERT OR IGNORE INTO facts_to_embed (id) VALUES (new.id);
END;

CREATE TRIGGER facts_to_embed_delete AFTER DELETE ON facts BEGIN
    DELETE FROM facts_to_embed WHERE id = old.id;
END;

INSERT INTO facts_to_embed (id) SELECT id FROM facts;

-- version 3: injected-context: what each session was given, its last requests, description vectors

-- The owner's last requests in each session, as injected-context recorded them (the newest
-- three per session are kept): the two before the current one go to the classifier as context.
-- `source` is the delivery that served the prompt: the mod ('mod', before Claude Code runs the
-- settings hooks) or the settings hook ('hook', with Claude Code's prompt_id). A settings hook
-- that finds the same prompt just served by the mod stays out, so that with both installed a
-- prompt is weighed, and its rules injected, once.
CREATE TABLE context_requests (
    id        INTEGER PRIMARY KEY,
    session   TEXT NOT NULL,
    prompt_id TEXT,
    source    TEXT NOT NULL CHECK (source IN ('mod', 'hook')),
    prompt    TEXT NOT NULL,
    at        REAL NOT NULL
);
CREATE INDEX context_requests_by_session ON context_requests (session, id);

-- Rule files (by path) a session has been given, until its context is compacted or cleared.
CREATE TABLE context_given (
    session TEXT NOT NULL,
    rule    TEXT NOT NULL,
    at      TEXT NOT NULL,
    PRIMARY KEY (session, rule)
) WITHOUT ROWID;

-- Embeddings of descriptions (and their parts), by the model that made them and the text: a
-- description is embedded once, not on every prompt. Derived: deleting rows only costs a
-- request to the endpoint. Little-endian float32, unit length.
CREATE TABLE context_vectors (
    model  TEXT NOT NULL,
    text   TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model, text)
) WITHOUT ROWID;

-- version 4: what each search cost the agent's context; facts by last change and confirmation

-- One row per recorded memory_search, written in the search's own transaction: how many facts it
-- returned, how many in full (the others as their id only), and the characters of the answer the
-- model reads (the structured JSON, which Claude Code shows the model in place of the text).
-- `memory-gate stats` averages them.
CREATE TABLE searches (
    id    INTEGER PRIMARY KEY,
    turn  INTEGER NOT NULL REFERENCES turns (id) ON DELETE CASCADE,
    at    TEXT NOT NULL,
    facts INTEGER NOT NULL,
    full  INTEGER NOT NULL,
    chars INTEGER NOT NULL
);

-- `memory-gate show` lists facts newest change first and `memory-gate review` the longest
-- unconfirmed first: read in index order, a large memory streams without a sort.
CREATE INDEX facts_by_updated ON facts (updated);
CREATE INDEX facts_by_confirmed ON facts (confirmed);

-- version 5: what was shown, by the context that saw it

-- A fact comes back as its id only to the context that has its text: a subagent shares its
-- parent's session id but not its context, and so do two processes resuming one session at once.
-- `context` is the MCP server process that answered the search (one per Claude Code process) and,
-- within it, the subagent that searched ('' for the main agent). Rows of the session-wide table
-- this replaces are dropped: those facts come back in full once more, which is always safe.
DROP TABLE shown;
CREATE TABLE shown (
    session TEXT NOT NULL,
    context TEXT NOT NULL,
    fact    INTEGER NOT NULL,
    rev     INTEGER NOT NULL,
    PRIMARY KEY (session, context, fact)
) WITHOUT ROWID;

-- The subagent that made the call (the PreToolUse hook's agent_id), NULL for the main agent.
ALTER TABLE tool_calls ADD COLUMN agent TEXT;

-- version 6: whether each search had meaning, and why not

-- NULL where no embeddings endpoint is configured (words only is then the owner's choice);
-- 'used' when the query had its vector; else the reason search fell back to words, in a few
-- words. `memory-gate stats` and `doctor` say how often that happened.
ALTER TABLE searches ADD COLUMN meaning TEXT;

-- version 7: what each search looked for; facts by kind; searches and writes by turn

-- The terms of each recorded memory_search, so that `memory-gate view` can show what a turn
-- searched for. NULL for searches recorded before this version, and for terms that looked like
-- a credential (gate/credentials.py): those are never stored.
ALTER TABLE searches ADD COLUMN terms TEXT;

-- `memory-gate view` lists one kind, the most recently changed first, and counts it: read in
-- index order, a page of 100k facts costs a few milliseconds rather than a scan.
CREATE INDEX facts_by_kind ON facts (kind, updated);

-- The viewer's timeline shows each turn with its searches and what its writes did: found by
-- turn, not by scanning every search and write ever made.
CREATE INDEX searches_by_turn ON searches (turn);
CREATE INDEX writes_by_turn ON writes (turn);

-- version 8: the revision of each fact a turn read

-- The revision a turn's search returned each fact at, so that a write which keeps, updates or
-- deletes a fact another session changed since is refused with the fact as it is now, rather than
-- overwriting or confirming what the turn never saw. NULL for reads recorded before this version:
-- those are not checked.
ALTER TABLE reads ADD COLUMN rev INTEGER;

-- version 9: why a turn could not keep memory

-- Set by the server when the memory a turn must keep could not be reached (a team's PostgreSQL
-- down or cut off): the gate then lets the answer out with this reason on the owner's screen
-- instead of holding an answer that no write could free. A later search that reaches memory
-- clears it, and the turn owes again.
ALTER TABLE turns ADD COLUMN excused TEXT;

-- version 10: writes to a team's memory the ledger has not taken in yet

-- A write to a team's memory commits there first, then here: if this file's commit then fails
-- (a full disk, an I/O error, the server killed between the two), the team has changes this
-- ledger does not know, and the agent's next write, a new call, would apply them again (a
-- second copy of each new fact) or be refused for facts it had changed itself. So the write is
-- noted here, committed, before it goes to the team, and the note is taken away in the ledger's
-- own transaction. A note still here at the session's next write is settled then
-- (gate/memory/pending.py): the team's record says whether the write committed, and if it did,
-- the ledger takes it in as the write would have.
CREATE TABLE team_writes (
    -- The write's id, as the team's record names it (changes.line->>'write').
    id          TEXT PRIMARY KEY,
    session     TEXT NOT NULL,
    turn        INTEGER NOT NULL,
    tool_use_id TEXT,
    digest      TEXT NOT NULL,
    -- The facts it kept, a JSON list: a keep leaves no row in the team's record.
    kept        TEXT NOT NULL,
    at          TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX team_writes_by_session ON team_writes (session);

-- version 11: when each fact's vector last changed

-- One row per fact whose vector was ever stored or dropped, `seq` the place of its latest change
-- in the order of all of them (the highest so far, plus one). gate/search/vectors.py writes it in
-- the transaction that stores or drops the vector, and the trigger below for a memory-gate from
-- before this version still running (it takes a fact off facts_to_embed as it stores the vector).
-- A server keeps the vectors in its own memory for speed (gate/search/matrix.py): before each
-- search it reads the highest `seq` and fetches again the vectors changed since, whichever
-- connection or process changed them. Dropping the whole index changes the schema, which that
-- copy also watches.
CREATE TABLE vector_changes (
    id  INTEGER PRIMARY KEY,
    seq INTEGER NOT NULL
);
CREATE INDEX vector_changes_by_seq ON vector_changes (seq);

CREATE TRIGGER vector_changes_stored AFTER DELETE ON facts_to_embed BEGIN
    INSERT INTO vector_changes (id, seq) SELECT old.id, coalesce(max(seq), 0) + 1 FROM vector_changes WHERE true
    ON CONFLICT (id) DO UPDATE SET seq = excluded.seq;
END;

-- template vectors: the vector index (sqlite-vec), {bits} = the dimension rounded up to bytes

-- One row per fact, rowid = fact id. `embedding` is the fact's unit-length float32 vector,
-- little-endian: cosine distance to it is the meaning distance. `bits` holds one bit per
-- dimension, set where the vector lies above the center (meta `vector_center`, the mean of the
-- model's REFERENCE vectors; signs until the index outgrows exact search, gate/search/vectors.py).
--
-- Why two columns: exact cosine over every vector costs about 13 ms at 10k facts of 1024
-- dimensions and 130 ms at 100k. Search ranks by Hamming distance over the bits first (vec0
-- scans 128 bytes per fact) and computes the exact cosine for the best candidates only, reading
-- `embedding` from vec0's plain auxiliary table. Kept as a float[N] column instead, each vector
-- would be read out of a chunk blob, several times slower. Centering the bits matters: models
-- such as e5 put every text in one narrow cone, where raw signs are nearly all alike.
--
-- chunk_size counts rows. The float vectors are not in the chunks, only the bits: a chunk of
-- 1024 rows of 1024 bits is 128 KB (256 float vectors of 1024 dimensions would be 1 MB), and
-- fewer, larger chunks make the Hamming scan faster (measured at 100k facts, 100 candidates:
-- 15 ms against 23 ms with 256 rows per chunk).
CREATE VIRTUAL TABLE facts_vec USING vec0(
    bits bit[{bits}],
    +embedding blob,
    chunk_size = 1024
);
