"""Words looked up in a team's memory on PostgreSQL: gate.search.fulltext's Index over
gate.engine.postgres, so that the tiers and the judgement run unchanged and the same query
returns the same facts on both engines (tests/test_postgres.py holds them equal).

What FTS5 gives the SQLite index for free is asked of PostgreSQL here: how many facts hold each
word (fts5vocab's `doc`), from the `lexemes` counters schema-postgres.sql keeps (section 2);
whether a tier reaches enough facts, from the GIN index; the ranked match
(gate.engine.teamwords.match, FTS5's own bm25, summed by PostgreSQL for phrases of one word, in
Python for longer ones).
"""

from __future__ import annotations

from gate.engine import teamwords
from gate.search import query as fts


class TeamIndex:
    """The words of one project of a team database (`conn` from postgres.connect)."""

    def __init__(self, conn, project: int):
        self.conn, self.project = conn, project

    def _count(self, tsquery: str) -> int:
        return self.conn.execute(
            "SELECT count(*) FROM facts WHERE project = %s AND words @@ %s::tsquery", (self.project, tsquery)
        ).fetchone()[0]

    def frequencies(self, parsed: fts.Query) -> tuple[int, list[int], list[int]]:
        """search._frequencies' figures: the ids handed out so far, and for each term how many
        facts hold it in any form (a stem's words counted one by one, as fts5vocab counts
        them) and at most how many hold an exact form. From the `lexemes` counters (one query
        for every word of the query), not from the facts."""
        row = self.conn.execute("SELECT last_fact FROM projects WHERE id = %s", (self.project,)).fetchone()
        size = max(row[0] if row else 0, 1)
        forms = sorted(
            {form for term in parsed.terms if not term.cjk for form in (*term.forms, *term.near) if " " not in form}
        )
        prefixes = sorted({term.prefix for term in parsed.terms if term.prefix is not None})
        held: dict[str, int] = {}
        if forms:
            held = dict(
                self.conn.execute(
                    "SELECT lexeme, docs FROM lexemes WHERE project = %s AND lexeme = ANY(%s)", (self.project, forms)
                )
            )
        stems: dict[str, int] = {}
        for prefix in prefixes:
            stems[prefix] = int(
                self.conn.execute(
                    "SELECT coalesce(sum(docs), 0) FROM lexemes WHERE project = %s AND lexeme LIKE %s",
                    (self.project, teamwords.like_prefix(prefix)),
                ).fetchone()[0]
            )
        counts, exact = [], []
        for term in parsed.terms:
            docs, phrase = 0, False
            if term.cjk:
                docs = self._count(teamwords.phrase_text(tuple(term.word), cjk=True))
            for form in () if term.cjk else term.forms:
                if " " in form:
                    phrase = True  # as in SQLite: a phrase of words is no vocabulary entry
                else:
                    docs += held.get(form, 0)
            exact.append(size if phrase else min(docs, size))
            if term.prefix is not None:
                docs = max(docs, stems[term.prefix])
            docs += sum(held.get(word, 0) for word in term.near)
            counts.append(min(docs, size))
        return size, counts, exact

    def vocabulary(self, letter: str) -> list[tuple[str, int]]:
        """The project's words beginning with `letter`, and how many facts hold each."""
        return self.conn.execute(
            "SELECT lexeme, docs FROM lexemes WHERE project = %s AND lexeme LIKE %s",
            (self.project, teamwords.like_prefix(letter)),
        ).fetchall()

    def expression(self, parsed: fts.Query, *, every: bool = False, exact_only: bool = False) -> fts.Expression | None:
        return parsed.tsquery(every=every, exact_only=exact_only)

    def reaches(self, expression: fts.Expression, count: int, after: int) -> bool:
        found = self.conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM facts WHERE project = %s AND words @@ %s::tsquery AND id > %s LIMIT %s) x",
            (self.project, expression.text, after, count),
        ).fetchone()[0]
        return found >= count

    def match(self, expression: fts.Expression, limit: int, after: int, *, phrases: bool) -> list:
        rows = teamwords.match(self.conn, self.project, expression, limit, after)
        # As SQLite's first tier, which does not ask which phrases a fact matched.
        return rows if phrases else [(fact, rank, None) for fact, rank, _ in rows]


def rebuild_words(team) -> int:
    """`memory-gate reindex` on a team's project (a gate.engine.teamfacts TeamFacts): every
    fact's words cut again by gate.engine.tokens, and the counters bm25 reads (the project's
    totals, each word's facts) counted afresh from them, under the project's lock, in one
    transaction. Returns how many facts. What search misses after a tokenizer change, or a
    counter a hand-made change to the database put wrong, is right again."""
    with team.transaction():
        conn, project = team.conn, team.project
        conn.execute("SET LOCAL statement_timeout = 0")  # a person waits for a whole project's words
        conn.execute("SELECT 1 FROM projects WHERE id = %s FOR UPDATE", (project,))
        rows = conn.execute("SELECT id, topic, text FROM facts WHERE project = %s ORDER BY id", (project,)).fetchall()
        with conn.cursor() as cursor:
            cursor.executemany(
                "UPDATE facts SET words = %s::tsvector WHERE project = %s AND id = %s",
                [(teamwords.words(topic, text), project, fact) for fact, topic, text in rows],
            )
        # The triggers kept the counters through those updates; counted afresh all the same,
        # since mending counters that are wrong is what a reindex is for.
        conn.execute(
            "UPDATE projects SET facts = c.facts, words = c.words FROM (SELECT count(*) AS facts,"
            " coalesce(sum(length), 0) AS words FROM facts WHERE project = %s) c WHERE id = %s",
            (project, project),
        )
        conn.execute("DELETE FROM lexemes WHERE project = %s", (project,))
        conn.execute(
            "INSERT INTO lexemes (project, lexeme, docs) SELECT f.project, u.lexeme, count(*)"
            " FROM facts f, unnest(f.words) u WHERE f.project = %s GROUP BY f.project, u.lexeme",
            (project,),
        )
    return len(rows)
