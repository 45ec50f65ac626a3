"""A fact's words on a team's PostgreSQL as the SQLite index holds them, and word matching ranked
by FTS5's own bm25, summed in SQL from the project's counters (schema-postgres.sql section 2)
for queries of single words, so that the same query finds and ranks the same facts on both
engines (tests/test_postgres.py holds them equal). Apart from gate.engine.postgres, which
connects, applies the schema and says what went wrong: this is the words, pure text builders
and the SQL that ranks by them.
"""

from __future__ import annotations

from gate.engine.store import ABSENT, IN_TEXT, IN_TOPIC

# A fact's words as a tsvector literal: the columns of the SQLite index, each with its weight
# (topic A, text D, the CJK spelling C), GAP positions apart so that no phrase (`<->`) joins the
# last word of one column to the first of the next.
GAP = 10
MAX_POSITION = 16383  # PostgreSQL's: a later position is stored as this one


def lexeme(word: str) -> str:
    """A word as tsvector and tsquery text read it back, whatever it holds."""
    # unicode61 cuts at quotes and backslashes, so no word holds one today; escaped all the same,
    # since a literal broken by one would be an error in every write of that fact.
    return "'" + word.replace("\\", "\\\\").replace("'", "''") + "'"


def words(topic: str, text: str) -> str:
    """The tsvector literal of a fact's words, cut and folded by gate.engine.tokens, the
    tokenizer of the SQLite index, so that PostgreSQL's own parser never cuts them otherwise:
    `'deploy':1A 'staging':12 ...`. Cast it with ::tsvector."""
    from gate.engine import tokens

    columns = (
        (tokens.words(topic), "A"),
        (tokens.words(text), ""),
        (tokens.words(tokens.cjk_chars(f"{topic} {text}")), "C"),
    )
    parts, position = [], 0
    for found, weight in columns:
        for word in found:
            position += 1
            parts.append(f"{lexeme(word)}:{min(position, MAX_POSITION)}{weight}")
        position += GAP
    return " ".join(parts)


def like_prefix(prefix: str) -> str:
    """A LIKE pattern for words starting with `prefix`, its own % and _ taken literally."""
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def phrase_text(words: tuple[str, ...], prefix: bool = False, cjk: bool = False) -> str:
    """One phrase as tsquery text over words(): its words in a row, the last a prefix when
    `prefix`, each in the CJK spelling (weight C) when `cjk`, as FTS5's `cjk : "..."` looks there."""
    if prefix:
        return f"{lexeme(words[0])}:*"
    joined = " <-> ".join(lexeme(word) + (":C" if cjk else "") for word in words)
    return f"({joined})" if len(words) > 1 else joined


# bm25 as FTS5 computes it (fts5_aux.c), with schema.sql's rank: bm25(5.0, 1.0, 1.0) over the
# topic, the text and the CJK spelling, here weights A, D and C.
K1, B = 1.2, 0.75
_COLUMN_WEIGHT = {"A": 5.0, "D": 1.0, "C": 1.0}


def _instances(held: dict, phrase) -> list[str]:
    """The weight (column) of each instance of `phrase` among a row's words."""
    words, prefix, cjk = phrase
    if prefix:
        return [weight for word, places in held.items() if word.startswith(words[0]) for _, weight in places]
    found = []
    for position, weight in held.get(words[0], ()):
        if cjk and weight != "C":
            continue
        if all((position + k, weight) in held.get(word, ()) for k, word in enumerate(words[1:], start=1)):
            found.append(weight)
    return found


def match(conn, project: int, expression, limit: int, after: int = 0) -> list[tuple[int, float, bytes]]:
    """gate.search.fulltext `_match` on PostgreSQL: (id, bm25 rank: lower is better, matched
    phrases as gate_phrases' bytes) of the best `limit` facts of the project with an id above
    `after` whose words match `expression` (a gate.search.query Expression as tsquery text),
    best first, equal ranks in id order. Its phrases, in its numbering, are each (words, prefix,
    cjk). The rank is FTS5's own, so that the same query ranks the same facts alike on both engines."""
    import math

    text, phrases = expression.text, expression.phrases

    # The project's totals, as the counters of schema-postgres.sql section 2 keep them.
    count, total = conn.execute("SELECT facts, words FROM projects WHERE id = %s", (project,)).fetchone() or (0, 0)
    rows = max(count, 1)
    average = total / rows if total else 1.0
    # A phrase of one word is held by as many facts as `lexemes` says; a longer phrase, a prefix
    # (a fact holding two of its words is one fact) or a CJK word (weight C only) is counted.
    single = sorted({words[0] for words, prefix, cjk in phrases if len(words) == 1 and not prefix and not cjk})
    docs = (
        dict(
            conn.execute("SELECT lexeme, docs FROM lexemes WHERE project = %s AND lexeme = ANY(%s)", (project, single))
        )
        if single
        else {}
    )
    idf, held = [], []
    for phrase in phrases:
        words, prefix, cjk = phrase
        if len(words) == 1 and not prefix and not cjk:
            hits = docs.get(words[0], 0)
        elif prefix and (bounded := _prefix_facts(conn, project, words[0], rows)) is not None:
            hits = bounded
        else:
            hits = conn.execute(
                "SELECT count(*) FROM facts WHERE project = %s AND words @@ %s::tsquery",
                (project, phrase_text(*phrase)),
            ).fetchone()[0]
        hits = min(hits, rows)  # counters a hand-made change put wrong rank badly, never crash (reindex mends them)
        held.append(hits)
        value = math.log((rows - hits + 0.5) / (hits + 0.5))
        idf.append(value if value > 0 else IDF_FLOOR)
    if all(len(words) == 1 and not cjk for words, _, cjk in phrases):
        return _ranked_rarest_first(conn, project, expression, idf, held, average, limit, after)
    exact, starts = _query_words(phrases)
    found = []
    for fact, length, held_json in conn.execute(
        "SELECT id, length, (SELECT json_agg(json_build_array(lexeme, positions, weights)) FROM unnest(words)"
        "  WHERE lexeme = ANY(%s) OR lexeme LIKE ANY(%s))"
        " FROM facts WHERE project = %s AND words @@ %s::tsquery AND id > %s",
        (exact, starts, project, text, after),
    ):
        positions_of = {word: list(zip(positions, weights)) for word, positions, weights in held_json or ()}
        score, matched = 0.0, []
        for weight_of_idf, phrase in zip(idf, phrases):
            instances = _instances(positions_of, phrase)
            frequency = sum(_COLUMN_WEIGHT[weight] for weight in instances)
            score += weight_of_idf * (frequency * (K1 + 1.0)) / (frequency + K1 * (1 - B + B * length / average))
            matched.append(IN_TOPIC if "A" in instances else IN_TEXT if instances else ABSENT)
        found.append((fact, -1.0 * score, bytes(matched)))
    found.sort(key=lambda row: (row[1], row[0]))
    return found[:limit]


# idf of a phrase at least half the facts hold: FTS5 floors it here, so that it still counts.
IDF_FLOOR = 1e-6


def _prefix_facts(conn, project: int, prefix: str, rows: int) -> int | None:
    """How many facts hold a word starting with `prefix`, as far as bm25 tells it apart, from the
    `lexemes` counters alone where they settle it: a prefix of one word is that word's count, and
    one whose commonest word at least half the facts hold gets idf's floor whatever the exact
    count. None: count the facts (a GIN scan, tens of ms for a prefix most facts hold)."""
    words, most, total = conn.execute(
        "SELECT count(*), coalesce(max(docs), 0), coalesce(sum(docs), 0) FROM lexemes WHERE project = %s AND lexeme LIKE %s",
        (project, like_prefix(prefix)),
    ).fetchone()
    if words <= 1:
        return int(total)
    if 2 * most >= rows:
        return int(most)
    return None


def _ranked_rarest_first(
    conn, project: int, expression, idf: list[float], held: list[int], average: float, limit: int, after: int
) -> list[tuple[int, float, bytes]]:
    """_ranked_in_sql, without ranking every fact that holds only the query's common words when
    that cannot change the answer (MaxScore). A phrase adds less than its idf x (K1 + 1) to any
    fact's score, so a fact holding none of an any-term expression's rarer phrases scores below
    what its common phrases could add at most. Rank first the facts holding one of the rarest
    phrases (the GIN index finds them at once, where a word a third of the facts hold means
    reading a third of the project's words); when `limit` of them score at least that ceiling,
    no fact left out could have entered the answer, and it is exact. Else take in the next
    rarest phrases, their facts at least doubling what is ranked, and at last rank them all.
    `held`: how many facts hold each phrase."""
    phrases = expression.phrases
    if expression.every or len(phrases) < 2:  # every term: the index's intersection is already small
        return _ranked_in_sql(conn, project, expression.text, phrases, idf, average, limit, after)
    order = sorted(range(len(phrases)), key=lambda number: (held[number], number))
    tried = 0
    for size in range(1, len(order)):
        rarest, rest = order[:size], order[size:]
        reach = sum(held[number] for number in rarest)
        if reach < limit or (tried and reach < 2 * tried):
            continue
        tried = reach
        among = " | ".join(phrase_text(*phrases[number]) for number in rarest)
        found = _ranked_in_sql(conn, project, expression.text, phrases, idf, average, limit, after, among=among)
        ceiling = sum(idf[number] for number in rest) * (K1 + 1.0)
        if len(found) == limit and -found[-1][1] >= ceiling:
            return found
    return _ranked_in_sql(conn, project, expression.text, phrases, idf, average, limit, after)


def _query_words(phrases) -> tuple[list[str], list[str]]:
    """What of each matching fact's words the ranking reads: the words of the query's phrases,
    and LIKE patterns of its prefixes."""
    exact = sorted({word for words, prefix, _ in phrases if not prefix for word in words})
    starts = sorted({like_prefix(words[0]) for words, prefix, _ in phrases if prefix})
    return exact, starts


def _ranked_in_sql(
    conn,
    project: int,
    text: str,
    phrases,
    idf: list[float],
    average: float,
    limit: int,
    after: int,
    among: str | None = None,
) -> list[tuple[int, float, bytes]]:
    """match() for phrases of one word or a prefix each (most queries): the same bm25, summed in
    the same order, computed by PostgreSQL over each matching fact's words, so that only the best
    `limit` facts come back, of those matching tsquery `among` too when given. PostgreSQL's
    float8 is the IEEE double Python's float is."""
    columns, params = [], []
    for number, (words, prefix, _) in enumerate(phrases):
        held = "u.lexeme LIKE %s" if prefix else "u.lexeme = %s"
        columns.append(
            f"coalesce(sum(CASE WHEN {held} THEN CASE w WHEN 'A' THEN {_COLUMN_WEIGHT['A']!r}::float8"
            f" ELSE 1.0::float8 END END), 0::float8) AS f{number},"
            f" count(*) FILTER (WHERE {held} AND w = 'A') AS t{number}"
        )
        params += [like_prefix(words[0]) if prefix else words[0]] * 2
    norm = f"({K1!r}::float8 * (1 - {B!r}::float8 + {B!r}::float8 * f.length::float8 / %s::float8))"
    score = "0::float8" + "".join(
        f" + %s::float8 * (s.f{number} * ({K1!r}::float8 + 1.0::float8)) / (s.f{number} + {norm})"
        for number in range(len(phrases))
    )
    score_params = [value for weight in idf for value in (weight, average)]
    matched = ", ".join(
        f"CASE WHEN s.t{number} > 0 THEN {IN_TOPIC} WHEN s.f{number} > 0 THEN {IN_TEXT} ELSE {ABSENT} END"
        for number in range(len(phrases))
    )
    exact, starts = _query_words(phrases)
    # Each matching fact's words, cut down to the query's before SQL reads them a row a word: with
    # no prefix, by ts_delete (C, a binary search a word) of every other word, which keeps the
    # query's words in the order unnest gives them, so the sums add up alike; else all of them.
    held = (
        "unnest(ts_delete(f.words, tsvector_to_array(ts_delete(f.words, %s::text[])))) u"
        if not starts
        else "unnest(f.words) u"
    )
    sql = (
        f"SELECT id, rank, matched FROM (SELECT f.id, -1.0::float8 * ({score}) AS rank, ARRAY[{matched}] AS matched"
        f" FROM facts f, LATERAL (SELECT {', '.join(columns)} FROM {held}, unnest(u.weights) w"
        "  WHERE u.lexeme = ANY(%s) OR u.lexeme LIKE ANY(%s)) s"
        f" WHERE f.project = %s AND f.words @@ %s::tsquery{' AND f.words @@ %s::tsquery' if among else ''}"
        " AND f.id > %s) ranked ORDER BY rank, id LIMIT %s"
    )
    narrowed = (among,) if among else ()
    cut = () if starts else (exact,)
    rows = conn.execute(sql, (*score_params, *params, *cut, exact, starts, project, text, *narrowed, after, limit))
    return [(fact, rank, bytes(matched)) for fact, rank, matched in rows]
