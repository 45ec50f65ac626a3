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

-- version 2: counters, so that ranking never reads every fact of a project

-- What FTS5 keeps for bm25 without scanning (its totals and vocabulary), kept here by a trigger
-- on facts, so that every way of changing a fact (a change set, an import, COPY) keeps them
-- right: a fact's length in words (every position of every word, as FTS5 counts a row), the
-- project's facts and words in all, and how many of a project's facts hold each word.
ALTER TABLE facts ADD COLUMN length integer;
UPDATE facts SET length = (SELECT coalesce(sum(cardinality(positions)), 0) FROM unnest(words));
ALTER TABLE facts ALTER COLUMN length SET NOT NULL;

ALTER TABLE projects ADD COLUMN facts bigint NOT NULL DEFAULT 0;
ALTER TABLE projects ADD COLUMN words bigint NOT NULL DEFAULT 0;
UPDATE projects p SET
    facts = (SELECT count(*) FROM facts f WHERE f.project = p.id),
    words = (SELECT coalesce(sum(f.length), 0) FROM facts f WHERE f.project = p.id);

CREATE TABLE lexemes (
    project integer NOT NULL REFERENCES projects (id),
    lexeme  text NOT NULL,
    -- facts of the project holding the word, in any column (fts5vocab's `doc`)
    docs    bigint NOT NULL CHECK (docs >= 0),
    PRIMARY KEY (project, lexeme)
);
-- A stem's words, by prefix (lexeme LIKE 'deploy%').
CREATE INDEX lexemes_by_prefix ON lexemes (project, lexeme text_pattern_ops);
INSERT INTO lexemes (project, lexeme, docs)
    SELECT f.project, u.lexeme, count(*) FROM facts f, unnest(f.words) u GROUP BY f.project, u.lexeme;

-- Kept per statement (transition tables), so that a COPY or an INSERT of many facts updates
-- each counter once, not once a fact. The project's row is locked first by every change
-- (gate/engine/teamfacts.py), so that two members' writes wait for each other, never deadlock.
CREATE FUNCTION facts_length() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.length := (SELECT coalesce(sum(cardinality(positions)), 0) FROM unnest(NEW.words));
    RETURN NEW;
END
$$;

-- Add (sign 1) or take away (sign -1) the words of these facts from the counters.
CREATE FUNCTION facts_count(changed jsonb, sign integer) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    UPDATE projects p SET facts = p.facts + sign * c.facts, words = p.words + sign * c.words
        FROM (SELECT (r->>'project')::integer AS project, count(*) AS facts, sum((r->>'length')::bigint) AS words
              FROM jsonb_array_elements(changed) r GROUP BY 1) c
        WHERE p.id = c.project;
    IF sign > 0 THEN
        INSERT INTO lexemes (project, lexeme, docs)
            SELECT (r->>'project')::integer, u.lexeme, count(*)
            FROM jsonb_array_elements(changed) r, unnest((r->>'words')::tsvector) u GROUP BY 1, 2 ORDER BY 1, 2
            ON CONFLICT (project, lexeme) DO UPDATE SET docs = lexemes.docs + excluded.docs;
    ELSE
        UPDATE lexemes l SET docs = l.docs - c.docs
            FROM (SELECT (r->>'project')::integer AS project, u.lexeme, count(*) AS docs
                  FROM jsonb_array_elements(changed) r, unnest((r->>'words')::tsvector) u GROUP BY 1, 2) c
            WHERE l.project = c.project AND l.lexeme = c.lexeme;
        DELETE FROM lexemes l
            USING (SELECT DISTINCT (r->>'project')::integer AS project, u.lexeme
                   FROM jsonb_array_elements(changed) r, unnest((r->>'words')::tsvector) u) c
            WHERE l.project = c.project AND l.lexeme = c.lexeme AND l.docs = 0;
    END IF;
END
$$;

CREATE FUNCTION facts_counted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM facts_count((SELECT coalesce(jsonb_agg(jsonb_build_object('project', project, 'length', length, 'words', words::text)), '[]') FROM new_facts), 1);
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM facts_count((SELECT coalesce(jsonb_agg(jsonb_build_object('project', project, 'length', length, 'words', words::text)), '[]') FROM old_facts), -1);
    ELSE
        -- Only the facts whose words changed (a confirmation changes none).
        PERFORM facts_count((SELECT coalesce(jsonb_agg(jsonb_build_object('project', o.project, 'length', o.length, 'words', o.words::text)), '[]')
                             FROM old_facts o JOIN new_facts n ON n.project = o.project AND n.id = o.id
                             WHERE o.words IS DISTINCT FROM n.words), -1);
        PERFORM facts_count((SELECT coalesce(jsonb_agg(jsonb_build_object('project', n.project, 'length', n.length, 'words', n.words::text)), '[]')
                             FROM old_facts o JOIN new_facts n ON n.project = o.project AND n.id = o.id
                             WHERE o.words IS DISTINCT FROM n.words), 1);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER facts_length BEFORE INSERT OR UPDATE OF words ON facts
    FOR EACH ROW EXECUTE FUNCTION facts_length();
CREATE TRIGGER facts_counted_insert AFTER INSERT ON facts
    REFERENCING NEW TABLE AS new_facts FOR EACH STATEMENT EXECUTE FUNCTION facts_counted();
CREATE TRIGGER facts_counted_update AFTER UPDATE ON facts
    REFERENCING OLD TABLE AS old_facts NEW TABLE AS new_facts FOR EACH STATEMENT EXECUTE FUNCTION facts_counted();
CREATE TRIGGER facts_counted_delete AFTER DELETE ON facts
    REFERENCING OLD TABLE AS old_facts FOR EACH STATEMENT EXECUTE FUNCTION facts_counted();

-- version 3: each change as write.log would have recorded it

-- The change's whole line, as a local memory's write.log holds it (its write's id, the turn and
-- the owner's words that made it, what an import or an undo adds), and the member: so that `log`,
-- `history` and `undo` read a team's record as they read write.log, and `team push` carries a
-- memory's history over whole. NULL for changes made before this version.
ALTER TABLE changes ADD COLUMN line jsonb;
CREATE INDEX changes_by_write ON changes (project, (line->>'write'));

-- version 4: meaning: each project's vectors, and the facts still waiting for one

-- Which model's vectors a project holds, and their dimension: one space per project, so that
-- projects embedded by different models share the database. `reference` holds the vectors of
-- gate/search/vectors.py's REFERENCE texts in that model (float32, one after another), which tell
-- search how far "unrelated" lies for it. Made when a project's first vectors arrive.
CREATE TABLE vector_spaces (
    project   integer PRIMARY KEY REFERENCES projects (id),
    model     text NOT NULL,
    dimension integer NOT NULL CHECK (dimension > 0),
    reference bytea
);

-- Every fact whose vector is missing or out of date: a new fact, or one whose topic or text
-- changed, listed by the triggers below whoever changes it. A write stores the vector and takes
-- the fact off the list in its own transaction when the embeddings endpoint answered in time;
-- else a later write, a search or the member's server catches it up. Search never trusts the
-- vector of a fact listed here.
CREATE TABLE facts_to_embed (
    project integer NOT NULL,
    id      bigint NOT NULL,
    PRIMARY KEY (project, id),
    FOREIGN KEY (project, id) REFERENCES facts (project, id) ON DELETE CASCADE
);
INSERT INTO facts_to_embed (project, id) SELECT project, id FROM facts;

CREATE FUNCTION facts_to_embed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO facts_to_embed (project, id) SELECT project, id FROM new_facts ON CONFLICT DO NOTHING;
    ELSE
        INSERT INTO facts_to_embed (project, id)
            SELECT n.project, n.id FROM old_facts o JOIN new_facts n ON n.project = o.project AND n.id = o.id
            WHERE o.topic IS DISTINCT FROM n.topic OR o.text IS DISTINCT FROM n.text
            ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER facts_to_embed_insert AFTER INSERT ON facts
    REFERENCING NEW TABLE AS new_facts FOR EACH STATEMENT EXECUTE FUNCTION facts_to_embed();
CREATE TRIGGER facts_to_embed_update AFTER UPDATE ON facts
    REFERENCING OLD TABLE AS old_facts NEW TABLE AS new_facts FOR EACH STATEMENT EXECUTE FUNCTION facts_to_embed();

-- The vectors themselves need pgvector, which a server may lack or a member's role may not
-- install (it is not a trusted extension): made by this function, here when it can be, else by
-- gate/search/teamvectors.py when the first vectors arrive, once the database's owner has run
-- CREATE EXTENSION vector. Returns whether facts_vec exists. `embedding` has no fixed
-- dimension, since each project's space is its own; vectors are unit length, so cosine
-- distance (<=>) is the measure, computed exactly for each of the project's vectors.
CREATE FUNCTION memory_gate_vectors() RETURNS boolean LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF to_regclass('facts_vec') IS NOT NULL THEN
        RETURN true;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector') THEN
        IF NOT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') THEN
            RETURN false;
        END IF;
    END IF;
    -- In a block of its own, so that a role that may not create them leaves the caller's
    -- transaction (a member's write) as it was, and the answer is "no vectors".
    BEGIN
        CREATE EXTENSION IF NOT EXISTS vector;
        CREATE TABLE IF NOT EXISTS facts_vec (
            project   integer NOT NULL,
            id        bigint NOT NULL,
            embedding vector NOT NULL,
            PRIMARY KEY (project, id),
            FOREIGN KEY (project, id) REFERENCES facts (project, id) ON DELETE CASCADE
        );
    EXCEPTION WHEN insufficient_privilege THEN
        RETURN false;
    END;
    RETURN true;
END
$$;
SELECT memory_gate_vectors();

-- version 5: the local index's bit prefilter, for a project past vectors.EXACT_LIMIT vectors

-- As gate/search/vectors.py does locally: once a project holds more vectors than exact search
-- should measure one by one, each vector also keeps one bit per dimension, set where it lies
-- above `center` (float32 one after another: the mean of the model's REFERENCE vectors since
-- gate.search.vectors.center_of, the mean of the project's first vectors before), and a
-- search ranks by Hamming distance first (bit_count of the XOR: 128 bytes a fact at 1024
-- dimensions, against 4 KB for the exact distance) and measures only the best candidates
-- exactly. At 100k facts of 1024 dimensions exact search took about a second a query.
ALTER TABLE vector_spaces ADD COLUMN center bytea;

CREATE OR REPLACE FUNCTION memory_gate_vectors() RETURNS boolean LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF to_regclass('facts_vec') IS NOT NULL THEN
        RETURN true;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector') THEN
        IF NOT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') THEN
            RETURN false;
        END IF;
    END IF;
    BEGIN
        CREATE EXTENSION IF NOT EXISTS vector;
        CREATE TABLE IF NOT EXISTS facts_vec (
            project   integer NOT NULL,
            id        bigint NOT NULL,
            embedding vector NOT NULL,
            -- Set against the project's center, once it has one (NULL before).
            bits      bit varying,
            PRIMARY KEY (project, id),
            FOREIGN KEY (project, id) REFERENCES facts (project, id) ON DELETE CASCADE
        );
    EXCEPTION WHEN insufficient_privilege THEN
        RETURN false;
    END;
    RETURN true;
END
$$;
DO $$
BEGIN
    IF to_regclass('facts_vec') IS NOT NULL THEN
        ALTER TABLE facts_vec ADD COLUMN IF NOT EXISTS bits bit varying;
    END IF;
END
$$;

-- version 6: a write past its deadline is never applied; functions with their own search_path

-- A member's memory-gate gives each call a deadline and, when it passes, tells the agent that
-- nothing was written and closes its connection. A COMMIT already on its way (held up on a
-- half-dead network path and delivered later) must then not commit: each transaction sets
-- memory_gate.deadline (SET LOCAL, the server's clock when it began plus what the call had
-- left, gate/engine/postgres.py `bound`), and these triggers, deferred to the commit, refuse it
-- past that moment. A transaction that sets none (psql, maintenance) is not bounded.
CREATE FUNCTION memory_gate_in_time() RETURNS trigger LANGUAGE plpgsql SET search_path = pg_catalog AS $$
DECLARE
    deadline text := current_setting('memory_gate.deadline', true);
BEGIN
    IF deadline IS NOT NULL AND deadline <> '' AND clock_timestamp() > deadline::timestamptz THEN
        RAISE EXCEPTION 'this write reached its commit after its deadline (%), when its member had been told nothing was written: not applied', deadline
            USING ERRCODE = 'query_canceled';
    END IF;
    RETURN NULL;
END
$$;
CREATE CONSTRAINT TRIGGER changes_in_time AFTER INSERT ON changes
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION memory_gate_in_time();
CREATE CONSTRAINT TRIGGER facts_in_time AFTER UPDATE ON facts
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION memory_gate_in_time();

-- The trigger functions name their tables unqualified: run from psql (search_path public) or
-- by maintenance, they found none. Each now carries memory-gate's schema as its own.
ALTER FUNCTION facts_length() SET search_path FROM CURRENT;
ALTER FUNCTION facts_count(jsonb, integer) SET search_path FROM CURRENT;
ALTER FUNCTION facts_counted() SET search_path FROM CURRENT;
ALTER FUNCTION facts_to_embed() SET search_path FROM CURRENT;

-- version 7: the record of changes is the team's, not any member's to rewrite

-- Each change records the database role that made it (current_user: what the server knows,
-- where `member` is what the member's memory-gate says), and a member's name belongs to the
-- first role that writes under it (or the one `memory-gate team grant` gives it): another role
-- writing under that name is refused. The tables' owner (who runs `team push` of a history
-- naming many members, and maintenance) is not bound.
ALTER TABLE changes ADD COLUMN role name;

CREATE TABLE members (
    member text PRIMARY KEY,
    role   name NOT NULL
);

CREATE FUNCTION memory_gate_owner(claimant name) RETURNS boolean LANGUAGE sql STABLE SET search_path FROM CURRENT AS $$
    SELECT pg_has_role(claimant, (SELECT relowner FROM pg_class WHERE oid = 'changes'::regclass), 'MEMBER')
$$;

-- Claims `who` for `claimant` (a role the session may act as), or says whose it is. SECURITY
-- DEFINER: members read `members` but may not write it.
CREATE FUNCTION memory_gate_claim(who text, claimant name) RETURNS void LANGUAGE plpgsql SECURITY DEFINER
    SET search_path FROM CURRENT AS $$
DECLARE
    holder name;
BEGIN
    IF NOT pg_has_role(session_user, claimant, 'MEMBER') THEN
        RAISE EXCEPTION 'role % may not write as role %', session_user, claimant USING ERRCODE = 'insufficient_privilege';
    END IF;
    INSERT INTO members (member, role) VALUES (who, claimant) ON CONFLICT (member) DO NOTHING;
    SELECT m.role INTO holder FROM members m WHERE m.member = who;
    IF holder <> claimant THEN
        RAISE EXCEPTION 'the member name % belongs to the database role %, and this is role %: set MEMORY_GATE_MEMBER to your own name', who, holder, claimant
            USING ERRCODE = 'insufficient_privilege';
    END IF;
END
$$;
REVOKE ALL ON FUNCTION memory_gate_claim(text, name) FROM PUBLIC;

CREATE FUNCTION changes_signed() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    NEW.role := current_user;
    IF NOT memory_gate_owner(current_user) AND NOT EXISTS (
        SELECT 1 FROM members m WHERE m.member = NEW.member AND m.role = current_user) THEN
        PERFORM memory_gate_claim(NEW.member, current_user);
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER changes_signed BEFORE INSERT ON changes FOR EACH ROW EXECUTE FUNCTION changes_signed();

-- Append-only for members: a change is added, and its own line given once (gate/engine/
-- teamfacts.py writes the line just after the change, in the same transaction), never changed
-- or deleted after. Row-level security binds members; the owner is not bound by it (nor
-- should TRUNCATE be granted: doctor names it).
ALTER TABLE changes ENABLE ROW LEVEL SECURITY;
CREATE POLICY changes_read ON changes FOR SELECT USING (true);
CREATE POLICY changes_added ON changes FOR INSERT WITH CHECK (role = current_user);
CREATE POLICY changes_lined ON changes FOR UPDATE USING (role = current_user AND line IS NULL)
    WITH CHECK (role = current_user);

-- A fact changed with no change recorded for it (an UPDATE or DELETE by hand) is refused at
-- commit: the record replays to the facts. A confirmation (`confirmed` alone) and the owner's
-- maintenance are no change.
CREATE FUNCTION facts_recorded() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    fact facts%ROWTYPE;
    wanted text;
BEGIN
    IF memory_gate_owner(current_user) THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'DELETE' THEN
        fact := OLD;
        wanted := 'delete';
    ELSE
        fact := NEW;
        wanted := TG_OP;
        IF TG_OP = 'UPDATE' AND NEW.rev = OLD.rev AND NEW.topic = OLD.topic AND NEW.kind = OLD.kind
           AND NEW.text = OLD.text AND NEW.date = OLD.date THEN
            RETURN NULL;
        END IF;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM changes c WHERE c.project = fact.project AND c.fact = fact.id AND c.rev = fact.rev
                   AND c.op = lower(wanted) AND c.role = current_user) THEN
        RAISE EXCEPTION 'fact % of project % was changed (%) with no change recorded for it: every change of a fact goes with its row in changes', fact.id, fact.project, lower(wanted)
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NULL;
END
$$;
CREATE CONSTRAINT TRIGGER facts_recorded AFTER INSERT OR UPDATE OR DELETE ON facts
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION facts_recorded();

-- version 8: a change's line and a fact's changed_by name the change's own member

-- `history`, `log` and a stale keep's refusal name members from a change's line and a fact's
-- changed_by, so both must say what the server checked: the change's member, whose name its
-- role holds (section 7). A member's change whose line names another member, fact or op is
-- refused; and a fact changed in anything but what no change records (`confirmed`: a keep;
-- `words`: derived, `reindex` cuts them again) needs its change, made by the member the fact
-- then names.
CREATE FUNCTION changes_line_agrees() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF NEW.line IS NOT NULL AND NOT memory_gate_owner(current_user) AND (
        NEW.line->>'member' IS DISTINCT FROM NEW.member OR NEW.line->>'op' IS DISTINCT FROM NEW.op
        OR NEW.line->>'id' IS DISTINCT FROM NEW.fact::text) THEN
        RAISE EXCEPTION 'the line of change % names member %, % of fact %, and the change is %''s % of fact %: a change''s line says what its row says',
            NEW.seq, NEW.line->>'member', NEW.line->>'op', NEW.line->>'id', NEW.member, NEW.op, NEW.fact
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER changes_line_agrees BEFORE INSERT OR UPDATE OF line ON changes
    FOR EACH ROW EXECUTE FUNCTION changes_line_agrees();

CREATE OR REPLACE FUNCTION facts_recorded() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    fact facts%ROWTYPE;
    wanted text;
BEGIN
    IF memory_gate_owner(current_user) THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'DELETE' THEN
        fact := OLD;
        wanted := 'delete';
    ELSE
        fact := NEW;
        wanted := lower(TG_OP);
        IF TG_OP = 'UPDATE' AND (NEW.project, NEW.id, NEW.topic, NEW.kind, NEW.text, NEW.date, NEW.created, NEW.updated,
                                 NEW.rev, NEW.changed_by)
           IS NOT DISTINCT FROM (OLD.project, OLD.id, OLD.topic, OLD.kind, OLD.text, OLD.date, OLD.created, OLD.updated,
                                 OLD.rev, OLD.changed_by) THEN
            RETURN NULL;
        END IF;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM changes c WHERE c.project = fact.project AND c.fact = fact.id AND c.rev = fact.rev
                   AND c.op = wanted AND c.role = current_user
                   AND (wanted = 'delete' OR c.member = fact.changed_by)) THEN
        RAISE EXCEPTION 'fact % of project % was changed (%) with no change recorded for it by the member it names (%): every change of a fact goes with its row in changes', fact.id, fact.project, wanted, fact.changed_by
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NULL;
END
$$;

-- version 9: counters read the transition tables directly; the cheap checks of a change first

-- A bulk insert (gate/engine/teamfacts.py insert_many) spent most of its time in these triggers:
-- facts_counted handed each statement's facts to facts_count as JSON, their words printed and
-- parsed again (360 ms of 2,000 facts); the same sums are now taken from the transition tables.
-- And a change's checks ask the cheap question first: whether the line says what the row says,
-- and whether the member name is already this role's, before whether the role owns the tables.
-- Add (sign 1) or take away (sign -1) these facts' words from the counters: the facts given as
-- arrays (their projects, lengths and words), which hold the tsvectors as they are.
CREATE FUNCTION facts_count(projects integer[], lengths integer[], words tsvector[], sign integer) RETURNS void
    LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF cardinality(projects) = 0 THEN
        RETURN;
    END IF;
    UPDATE projects p SET facts = p.facts + sign * c.facts, words = p.words + sign * c.words
        FROM (SELECT r.project, count(*) AS facts, sum(r.length) AS words
              FROM unnest(projects, lengths) AS r (project, length) GROUP BY 1) c
        WHERE p.id = c.project;
    IF sign > 0 THEN
        INSERT INTO lexemes (project, lexeme, docs)
            SELECT r.project, u.lexeme, count(*)
            FROM unnest(projects, words) AS r (project, words), unnest(r.words) u GROUP BY 1, 2 ORDER BY 1, 2
            ON CONFLICT (project, lexeme) DO UPDATE SET docs = lexemes.docs + excluded.docs;
    ELSE
        UPDATE lexemes l SET docs = l.docs - c.docs
            FROM (SELECT r.project, u.lexeme, count(*) AS docs
                  FROM unnest(projects, words) AS r (project, words), unnest(r.words) u GROUP BY 1, 2) c
            WHERE l.project = c.project AND l.lexeme = c.lexeme;
        DELETE FROM lexemes l
            USING (SELECT DISTINCT r.project, u.lexeme
                   FROM unnest(projects, words) AS r (project, words), unnest(r.words) u) c
            WHERE l.project = c.project AND l.lexeme = c.lexeme AND l.docs = 0;
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION facts_counted() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    p integer[];
    l integer[];
    w tsvector[];
BEGIN
    IF TG_OP = 'INSERT' THEN
        SELECT coalesce(array_agg(project), '{}'), coalesce(array_agg(length), '{}'), coalesce(array_agg(words), '{}')
            INTO p, l, w FROM new_facts;
        PERFORM facts_count(p, l, w, 1);
    ELSIF TG_OP = 'DELETE' THEN
        SELECT coalesce(array_agg(project), '{}'), coalesce(array_agg(length), '{}'), coalesce(array_agg(words), '{}')
            INTO p, l, w FROM old_facts;
        PERFORM facts_count(p, l, w, -1);
    ELSE
        -- Only the facts whose words changed (a confirmation changes none).
        SELECT coalesce(array_agg(o.project), '{}'), coalesce(array_agg(o.length), '{}'), coalesce(array_agg(o.words), '{}')
            INTO p, l, w
            FROM old_facts o JOIN new_facts n ON n.project = o.project AND n.id = o.id WHERE o.words IS DISTINCT FROM n.words;
        PERFORM facts_count(p, l, w, -1);
        SELECT coalesce(array_agg(n.project), '{}'), coalesce(array_agg(n.length), '{}'), coalesce(array_agg(n.words), '{}')
            INTO p, l, w
            FROM old_facts o JOIN new_facts n ON n.project = o.project AND n.id = o.id WHERE o.words IS DISTINCT FROM n.words;
        PERFORM facts_count(p, l, w, 1);
    END IF;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION changes_line_agrees() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF NEW.line IS NOT NULL AND (
        NEW.line->>'member' IS DISTINCT FROM NEW.member OR NEW.line->>'op' IS DISTINCT FROM NEW.op
        OR NEW.line->>'id' IS DISTINCT FROM NEW.fact::text) AND NOT memory_gate_owner(current_user) THEN
        RAISE EXCEPTION 'the line of change % names member %, % of fact %, and the change is %''s % of fact %: a change''s line says what its row says',
            NEW.seq, NEW.line->>'member', NEW.line->>'op', NEW.line->>'id', NEW.member, NEW.op, NEW.fact
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END
$$;

CREATE OR REPLACE FUNCTION changes_signed() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    NEW.role := current_user;
    IF NOT EXISTS (SELECT 1 FROM members m WHERE m.member = NEW.member AND m.role = current_user)
       AND NOT memory_gate_owner(current_user) THEN
        PERFORM memory_gate_claim(NEW.member, current_user);
    END IF;
    RETURN NEW;
END
$$;
