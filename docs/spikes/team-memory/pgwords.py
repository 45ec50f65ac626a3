"""Words search on PostgreSQL the way gate.search.fulltext does it on FTS5: a spike, not the product.

A fact's words are cut and folded in Python by gate/engine/tokens.py (the FTS5 tokenizer itself),
and stored as a tsvector *literal* built here, so PostgreSQL's own parser never sees them and
cannot cut them differently: topic words at weight A, text words at weight D, the CJK spelling
(tokens.cjk_chars) at weight C, each column a few positions apart so that no phrase spans two.
`ntokens` is what FTS5's xColumnSize(-1) counts for the row (every token of the three columns).

Queries are gate/search/query.py's Query, its phrases turned into tsquery literals: a word
`'w'`, a multi-word form `'pull' <-> 'request'`, a stem `'deploy':*`, a CJK run
`'会':C <-> '議':C`.

Three rankings of the same candidates: ts_rank and ts_rank_cd (weights {D,C,B,A} = {0.2, 0.2, 0,
1}: the topic five times the text, as bm25(5, 1, 1)), and `bm25`, FTS5's own formula computed in
Python from the candidate rows' tsvectors (k1 1.2, b 0.75, idf from each phrase's hit count).
"""

from __future__ import annotations

import math
import re

from gate.engine import tokens
from gate.search import query as fts
from gate.search import fulltext as search

GAP = 10  # positions between columns: `<->` can never join the last word of one to the next
WEIGHTS = "{0.2,0.2,0,1}"  # ts_rank's {D, C, B, A}
COLUMN_WEIGHT = {"A": 5.0, "D": 1.0, "C": 1.0}  # bm25(5.0, 1.0, 1.0) of topic, text, cjk


def lexeme(word: str) -> str:
    return "'" + word.replace("\\", "\\\\").replace("'", "''") + "'"


def fact_vector(topic: str, text: str) -> tuple[str, int]:
    """(tsvector literal, token count) for one fact, cut exactly as FTS5 cuts it."""
    columns = [(tokens.words(topic), "A"), (tokens.words(text), ""),
               (tokens.words(tokens.cjk_chars(topic + " " + text)), "C")]
    parts, position, count = [], 0, 0
    for words, weight in columns:
        for word in words:
            position += 1
            parts.append(f"{lexeme(word)}:{position}{weight}")
        count += len(words)
        position += GAP
    return " ".join(parts), count


def phrase_query(term: fts.Term, prefix: bool, form: str | None) -> str:
    if term.cjk:
        return " <-> ".join(f"{lexeme(ch)}:C" for ch in term.word)
    if prefix:
        return f"{lexeme(term.prefix)}:*"
    return " <-> ".join(lexeme(word) for word in tokens.words(form))


class Expression:
    """The tsquery of one tier and, per phrase (in FTS5's order), its own tsquery, its term, and
    whether it is an exact form: the same numbering as gate/search/query.py's Expression."""

    def __init__(self, parsed: fts.Query, *, every: bool = False, exact_only: bool = False):
        self.phrases: list[str] = []
        self.owners: list[int] = []
        self.exact: list[bool] = []
        groups = []
        for index, term in enumerate(parsed.terms):
            found = []
            if term.cjk:
                found.append((phrase_query(term, False, None), True))
            else:
                found += [(phrase_query(term, False, form), True) for form in term.forms]
                if term.prefix is not None and not exact_only:
                    found.append((phrase_query(term, True, None), False))
            self.phrases += [q for q, _ in found]
            self.owners += [index] * len(found)
            self.exact += [same for _, same in found]
            groups.append("(" + " | ".join(f"({q})" for q, _ in found) + ")")
        self.text = (" & " if every else " | ").join(groups)


def frequencies(conn, parsed: fts.Query) -> tuple[int, list[int], list[int]]:
    """gate.search.fulltext _frequencies, from the vocab table (facts_vocab's stand-in)."""
    size = max(conn.execute("SELECT coalesce(max(id), 0) FROM facts").fetchone()[0], 1)
    counts, exact = [], []
    for term in parsed.terms:
        docs, phrase = 0, False
        if term.cjk:
            docs = conn.execute("SELECT count(*) FROM facts WHERE words @@ %s::tsquery",
                                (phrase_query(term, False, None),)).fetchone()[0]
        for form in () if term.cjk else term.forms:
            if " " not in form:
                row = conn.execute("SELECT docs FROM vocab WHERE term = %s", (form,)).fetchone()
                docs += row[0] if row else 0
            else:
                phrase = True
        exact.append(size if phrase else min(docs, size))
        if term.prefix is not None:
            row = conn.execute("SELECT coalesce(sum(docs), 0) FROM vocab WHERE term >= %s AND term < %s",
                               (term.prefix, term.prefix + "\U0010ffff")).fetchone()
            docs = max(docs, row[0])
        counts.append(min(docs, size))
    return size, counts, exact


_ENTRY = re.compile(r"'((?:[^']|'')*)'(?::([0-9A-D,]+))?")


def parse_vector(literal: str) -> dict[str, list[tuple[int, str]]]:
    """A tsvector's text form: lexeme -> [(position, weight)]."""
    found = {}
    for word, places in _ENTRY.findall(literal):
        word = word.replace("''", "'").replace("\\\\", "\\")
        found[word] = [(int(p.rstrip("ABCD")), (p[-1] if p[-1] in "ABC" else "D")) for p in places.split(",")] if places else []
    return found


def phrase_instances(vector: dict[str, list[tuple[int, str]]], phrase: str) -> list[str]:
    """The weights (columns) of each instance of one phrase tsquery in the row."""
    if phrase.endswith(":*"):
        prefix = phrase[1:-3].replace("''", "'")
        return [w for word, places in vector.items() if word.startswith(prefix) for _, w in places]
    parts = [p.strip() for p in phrase.split("<->")]
    words = [re.match(r"'((?:[^']|'')*)'", p).group(1).replace("''", "'") for p in parts]
    column = "C" if parts[0].endswith(":C") else None
    starts = vector.get(words[0], [])
    found = []
    for position, weight in starts:
        if column and weight != column:
            continue
        if all((position + k, weight) in vector.get(word, []) for k, word in enumerate(words[1:], 1)):
            found.append(weight)
    return found


def bm25_rows(conn, expression: Expression, rows, after: int):
    """FTS5's bm25 for each row (lower is better), as fts5_aux.c computes it."""
    n_rows, total = conn.execute("SELECT count(*), coalesce(sum(ntokens), 0) FROM facts").fetchone()
    avgdl = total / n_rows
    idf = []
    for phrase in expression.phrases:
        hits = conn.execute("SELECT count(*) FROM facts WHERE words @@ %s::tsquery", (phrase,)).fetchone()[0]
        value = math.log((n_rows - hits + 0.5) / (hits + 0.5))
        idf.append(value if value > 0 else 1e-6)
    ranked = []
    for rowid, literal, ntokens, matched in rows:
        vector = parse_vector(literal)
        score = 0.0
        for i, phrase in enumerate(expression.phrases):
            freq = sum(COLUMN_WEIGHT[w] for w in phrase_instances(vector, phrase))
            score += idf[i] * (freq * 2.2) / (freq + 1.2 * (1 - 0.75 + 0.75 * ntokens / avgdl))
        ranked.append((rowid, -score, matched))
    return ranked


def _phrase_parts(phrase: str) -> tuple[str, list[str]]:
    """('w', [word]) | ('p', [prefix]) | ('m', tokens) | ('c', tokens) for one phrase tsquery."""
    if phrase.endswith(":*"):
        return "p", [phrase[1:-3].replace("''", "'")]
    parts = [p.strip() for p in phrase.split("<->")]
    words = [re.match(r"'((?:[^']|'')*)'", p).group(1).replace("''", "'") for p in parts]
    if parts[0].endswith(":C"):
        return "c", words
    return ("w" if len(words) == 1 else "m"), words


def bm25_sql(conn, expression: Expression, limit: int, after: int, flags: str):
    """FTS5's bm25 computed by PostgreSQL itself over each matching row's tsvector."""
    n_rows, total = conn.execute("SELECT count(*), coalesce(sum(ntokens), 0) FROM facts").fetchone()
    avgdl = total / n_rows
    idf, kinds, singles, multis = [], [], [], []
    for i, phrase in enumerate(expression.phrases):
        hits = conn.execute("SELECT count(*) FROM facts WHERE words @@ %s::tsquery", (phrase,)).fetchone()[0]
        value = math.log((n_rows - hits + 0.5) / (hits + 0.5))
        idf.append(value if value > 0 else 1e-6)
        kind, words = _phrase_parts(phrase)
        if kind in ("w", "p"):
            singles.append((i, words[0], kind == "p"))
        else:
            multis.append((i, words, kind == "c"))
    single_sql = (
        "SELECT q.i, sum(CASE WHEN w = 'A' THEN 5.0 ELSE 1.0 END) AS freq"
        " FROM unnest(m.words) u, unnest(u.weights) w,"
        " unnest(%s::int[], %s::text[], %s::bool[]) AS q(i, word, prefix)"
        " WHERE CASE WHEN q.prefix THEN starts_with(u.lexeme, q.word) ELSE u.lexeme = q.word END"
        " GROUP BY q.i")
    multi_sql = " UNION ALL ".join(
        f"SELECT {i}, phrase_freq(m.words, %s::text[], {'true' if only_c else 'false'})" for i, _, only_c in multis)
    inner = single_sql + (" UNION ALL " + multi_sql if multis else "")
    sql = (
        f"SELECT m.id, -sum((%s::float8[])[fr.i + 1] * fr.freq * 2.2"
        f" / (fr.freq + 1.2 * (0.25 + 0.75 * m.ntokens / %s))) AS rank, {flags.replace('words', 'm.words')}"
        f" FROM (SELECT id, ntokens, words FROM facts WHERE words @@ %s::tsquery AND id > %s) m"
        f" CROSS JOIN LATERAL ({inner}) fr GROUP BY m.id, m.words ORDER BY 2, 1 LIMIT %s")
    params = [idf, avgdl, *expression.phrases, expression.text, after,
              [i for i, _, _ in singles], [w for _, w, _ in singles], [p for _, _, p in singles],
              *[words for _, words, _ in multis], limit]
    return conn.execute(sql, params).fetchall()


def bm25_postings(conn, expression: Expression, limit: int, after: int, *, fast: bool = False):
    """FTS5's bm25 from a postings table (term, fact, weighted frequency, row length): only the
    query's terms are read, as FTS5 reads its index; multi-token phrases through the tsvector.

    `fast`: the row count and total tokens from the counters row the write would keep, and every
    phrase's hit count in one statement (a one-token phrase's from vocab: FTS5's nHit for it is
    its document count), instead of a statement each."""
    idf, ranges, multis = [], [], []
    parts_of = [_phrase_parts(phrase) for phrase in expression.phrases]
    for i, (kind, words) in enumerate(parts_of):
        if kind in ("w", "p"):
            ranges.append((i, words[0], words[0] + ("\U0010ffff" if kind == "p" else "\x01")))
        else:
            multis.append((i, words, kind == "c", expression.phrases[i]))
    if fast:
        counts = ["(SELECT coalesce((SELECT docs FROM vocab WHERE term = %s), 0))" if kind == "w" else
                  "(SELECT count(DISTINCT fact) FROM postings WHERE term >= %s AND term < %s)" if kind == "p" else
                  "(SELECT count(*) FROM facts WHERE words @@ %s::tsquery)" for kind, _ in parts_of]
        params: list = []
        for i, (kind, words) in enumerate(parts_of):
            params += [words[0]] if kind == "w" else [ranges[[r[0] for r in ranges].index(i)][1], ranges[[r[0] for r in ranges].index(i)][2]] if kind == "p" else [expression.phrases[i]]
        row = conn.execute(f"SELECT rows, tokens, ARRAY[{', '.join(counts)}] FROM counters", params).fetchone()
        n_rows, total, all_hits = row[0], row[1], row[2]
    else:
        n_rows, total = conn.execute("SELECT count(*), coalesce(sum(ntokens), 0) FROM facts").fetchone()
        all_hits = []
        for i, (kind, words) in enumerate(parts_of):
            if kind in ("w", "p"):
                _, lo, hi = ranges[[r[0] for r in ranges].index(i)]
                all_hits.append(conn.execute("SELECT count(DISTINCT fact) FROM postings WHERE term >= %s AND term < %s",
                                             (lo, hi)).fetchone()[0])
            else:
                all_hits.append(conn.execute("SELECT count(*) FROM facts WHERE words @@ %s::tsquery",
                                             (expression.phrases[i],)).fetchone()[0])
    avgdl = total / n_rows
    for hits in all_hits:
        value = math.log((n_rows - hits + 0.5) / (hits + 0.5))
        idf.append(value if value > 0 else 1e-6)
    parts = ["SELECT q.i, p.fact, p.ntokens, sum(p.freq) AS freq FROM unnest(%s::int[], %s::text[], %s::text[]) AS q(i, lo, hi)"
             " CROSS JOIN LATERAL (SELECT fact, freq, ntokens FROM postings WHERE term >= q.lo AND term < q.hi AND fact > %s) p"
             " GROUP BY q.i, p.fact, p.ntokens"]
    params: list = [[i for i, _, _ in ranges], [lo for _, lo, _ in ranges], [hi for _, _, hi in ranges], after]
    for i, words, only_c, phrase in multis:
        parts.append(f"SELECT {i}, id, ntokens, phrase_freq(words, %s::text[], {'true' if only_c else 'false'})"
                     " FROM facts WHERE words @@ %s::tsquery AND id > %s")
        params += [words, phrase, after]
    having = ""
    if " & " in expression.text:
        groups: dict[int, list[int]] = {}
        for i, owner in enumerate(expression.owners):
            groups.setdefault(owner, []).append(i)
        having = " HAVING " + " AND ".join(f"bool_or(i IN ({', '.join(map(str, g))}))" for g in groups.values())
    sql = (f"WITH hits(i, fact, ntokens, freq) AS ({' UNION ALL '.join(parts)})"
           " SELECT fact, -sum((%s::float8[])[i + 1] * freq * 2.2 / (freq + 1.2 * (0.25 + 0.75 * ntokens / %s))),"
           f" array_agg(i) FROM hits GROUP BY fact{having} ORDER BY 2, 1 LIMIT %s")
    rows = conn.execute(sql, [*params, idf, avgdl, limit]).fetchall()
    count = len(expression.phrases)
    return [(fact, rank, bytes(1 if i in matched else 0 for i in range(count))) for fact, rank, matched in rows]


def match(conn, expression: Expression, limit: int, after: int, ranker: str):
    """(id, rank: lower is better, matched phrases) of the best `limit` rows, as search._match."""
    flags = "ARRAY[" + ", ".join("words @@ %s::tsquery" for _ in expression.phrases) + "]"
    if ranker == "bm25":
        rows = conn.execute(
            f"SELECT id, words::text, ntokens, {flags} FROM facts WHERE words @@ %s::tsquery AND id > %s",
            (*expression.phrases, expression.text, after)).fetchall()
        ranked = sorted(bm25_rows(conn, expression, rows, after), key=lambda row: (row[1], row[0]))
        return ranked[:limit]
    if ranker == "bm25_postings":
        return bm25_postings(conn, expression, limit, after)
    if ranker == "bm25_fast":
        return bm25_postings(conn, expression, limit, after, fast=True)
    if ranker == "bm25_sql":
        return bm25_sql(conn, expression, limit, after, flags)
    function = {"ts_rank": "ts_rank", "ts_rank_cd": "ts_rank_cd"}[ranker]
    rows = conn.execute(
        f"SELECT id, -{function}('{WEIGHTS}', words, %s::tsquery), {flags} FROM facts"
        " WHERE words @@ %s::tsquery AND id > %s ORDER BY 2, id LIMIT %s",
        (expression.text, *expression.phrases, expression.text, after, limit)).fetchall()
    return rows


def candidates(conn, typed: str, *, wanted: int = search.RESULTS, ranker: str = "bm25") -> list[search.Candidate]:
    """gate.search.fulltext _candidates, line for line, on PostgreSQL."""
    parsed = fts.parse(typed)
    if not parsed:
        return []
    size, docs, exact_docs = frequencies(conn, parsed)
    weights = [search._idf(size, count) for count in docs]
    common = {i for i, count in enumerate(docs) if count > search.COMMON_ROWS and count > search.COMMON_SHARE * size}
    if len(common) == len(parsed.terms):
        common = set()
    focused = parsed.without(common)
    kept = [weight for i, weight in enumerate(weights) if i not in common]
    held = [count for i, count in enumerate(docs) if i not in common]
    held_exact = [count for i, count in enumerate(exact_docs) if i not in common]
    known = sum(weight for weight, count in zip(kept, held) if count)
    if not known:
        return []
    after = size - search.RECENT_WINDOW if min(held) > search.RECENT_WINDOW else 0
    tiers = [(Expression(focused, every=True, exact_only=True), min(held_exact), wanted)]
    if len(focused.terms) > 1:
        tiers.append((Expression(focused, every=True), min(held), search.POOL))
    tiers.append((Expression(focused), size, search.POOL))
    tried: set[str] = set()
    for expression, most, fetch in tiers:
        if expression.text in tried or (most < wanted and expression is not tiers[-1][0]):
            continue
        tried.add(expression.text)
        rows = match(conn, expression, fetch, after, ranker)
        if len(rows) >= wanted:
            break
    found = []
    for rowid, rank, matched in rows:
        terms = {owner for owner, hit in zip(expression.owners, matched) if hit}
        exact = {owner for owner, hit, same in zip(expression.owners, matched, expression.exact) if hit and same}
        coverage = sum(kept[term] for term in terms) / known
        tier = 0 if len(exact) == len(kept) else 1 if len(terms) == len(kept) else 2
        found.append(search.Candidate(rowid, -rank * coverage, coverage, tier))
    found.sort(key=lambda candidate: (candidate.tier, -candidate.score))
    return found


def by_words(conn, typed: str, *, limit: int = search.RESULTS, ranker: str = "bm25") -> list[int]:
    return search._judge(candidates(conn, typed, wanted=limit, ranker=ranker)).first(limit).ranked()


SCHEMA = """
CREATE TABLE facts (
    id       bigint PRIMARY KEY,
    topic    text NOT NULL,
    text     text NOT NULL,
    words    tsvector NOT NULL,
    ntokens  integer NOT NULL
);
CREATE INDEX facts_words ON facts USING gin (words);
CREATE TABLE vocab (term text PRIMARY KEY, docs integer NOT NULL);
CREATE TABLE postings (term text, fact bigint, freq real, ntokens integer, PRIMARY KEY (term, fact));
-- What the write would keep up to date in its transaction: facts and their tokens, for avgdl.
CREATE TABLE counters (rows bigint NOT NULL, tokens bigint NOT NULL);
-- Instances of a phrase of several tokens in a tsvector, weighed by column as bm25(5, 1, 1):
-- positions of the first token from which every next token follows, in the same column.
CREATE FUNCTION phrase_freq(v tsvector, toks text[], only_c boolean) RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT coalesce(sum(CASE WHEN s.w = 'A' THEN 5.0 ELSE 1.0 END), 0)
  FROM unnest(v) u0, unnest(u0.positions, u0.weights) AS s(p, w)
  WHERE u0.lexeme = toks[1] AND (NOT only_c OR s.w = 'C')
    AND NOT EXISTS (
      SELECT 1 FROM generate_series(2, cardinality(toks)) k
      WHERE NOT EXISTS (
        SELECT 1 FROM unnest(v) u, unnest(u.positions, u.weights) AS t(p, w)
        WHERE u.lexeme = toks[k] AND t.p = s.p + k - 1 AND t.w = s.w))
$$;
"""


def load(conn, facts: list[tuple[int, str, str]]) -> None:
    """Facts (id, topic, text) into a fresh schema; vocab from ts_stat (the product would keep
    it in the write's own transaction)."""
    conn.execute(SCHEMA)
    with conn.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO facts (id, topic, text, words, ntokens) VALUES (%s, %s, %s, %s::tsvector, %s)",
            [(fid, topic, text, *fact_vector(topic, text)) for fid, topic, text in facts])
    conn.execute("INSERT INTO vocab SELECT word, ndoc FROM ts_stat('SELECT words FROM facts')")
    # The postings: what the write would keep beside each fact, in its transaction.
    with conn.cursor() as cursor, cursor.copy("COPY postings (term, fact, freq, ntokens) FROM STDIN") as copy:
        for fid, topic, text in facts:
            freq: dict[str, float] = {}
            columns = [(tokens.words(topic), 5.0), (tokens.words(text), 1.0),
                       (tokens.words(tokens.cjk_chars(topic + " " + text)), 1.0)]
            for words, weight in columns:
                for word in words:
                    freq[word] = freq.get(word, 0.0) + weight
            ntokens = sum(len(words) for words, _ in columns)
            for word, value in freq.items():
                copy.write_row((word, fid, value, ntokens))
    conn.execute("INSERT INTO counters SELECT count(*), coalesce(sum(ntokens), 0) FROM facts")
    conn.execute("ANALYZE facts")
    conn.execute("ANALYZE postings")
