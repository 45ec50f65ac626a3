"""Question 2: accent-insensitive words search on PostgreSQL without unaccent, beside SQLite's FTS5.

    .venv/bin/python spike/s2_words.py
"""

from __future__ import annotations

import json
import random
import re
import sys
from pathlib import Path

import psycopg

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT), str(ROOT / "bench")]
import pg  # noqa: E402
import pgwords  # noqa: E402
import retrieval  # noqa: E402  bench/retrieval.py: the same facts the retrieval bench builds

from gate.engine import store, tokens  # noqa: E402
from gate.search import query as fts  # noqa: E402
from gate.search import fulltext as search  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "claude-mem-lite"
if not DATA.exists():
    DATA = Path("/work/shared/data/claude-mem-lite")

TRICKY = [
    "A configuração do banco de dados usa PostgreSQL 16; não mexer.",
    "йогурт ёлка країна διαρροής Straße ǅemal façade naïve Ærø İstanbul ı",
    "C++ node.js -O2 topic:deploy NOT it's user@example.com http://x.org/a_b 1.2.3 v2 3d 1e5 0x1F",
    "東京都庁の会議は毎週月曜日です。会議室は3階",
    "Tiếng Việt có dấu: Hà Nội, Đà Nẵng; עִבְרִית; العَرَبِيَّة; हिन्दी; ไทย",
    "emoji 🙂 deploy🚀prod ½ ² ① ⅷ",
    "snake_case camelCase kebab-case dotted.name path/to/file.py",
]


def lexemes_of(vector_text: str) -> list[str]:
    """The words of a tsvector in position order."""
    placed = []
    for word, places in pgwords._ENTRY.findall(vector_text):
        for place in places.split(","):
            placed.append((int(place.rstrip("ABCD")), word.replace("''", "'")))
    return [word for _, word in sorted(placed)]


def random_texts(count: int, seed: int = 17) -> list[str]:
    """Random strings over letters, digits, marks and punctuation of many scripts."""
    rng = random.Random(seed)
    ranges = [(0x20, 0x7E), (0xC0, 0x24F), (0x300, 0x36F), (0x370, 0x3FF), (0x400, 0x4FF), (0x590, 0x5FF),
              (0x600, 0x6FF), (0x900, 0x97F), (0xE00, 0xE7F), (0x1E00, 0x1EFF), (0x2000, 0x206F),
              (0x3040, 0x30FF), (0x4E00, 0x4E80), (0xAC00, 0xAC80), (0xFF00, 0xFF60), (0x1F300, 0x1F64F)]
    texts = []
    for _ in range(count):
        chars = []
        for _ in range(rng.randint(1, 80)):
            low, high = rng.choice(ranges)
            chars.append(chr(rng.randint(low, high)) if rng.random() > 0.15 else " ")
        texts.append("".join(chars))
    return texts


def identity(conn, texts: list[str]) -> None:
    """Python-folded words through to_tsvector('simple', ...) and through a tsvector literal."""
    simple_bad, literal_bad, raw_bad, total = [], [], [], 0
    for text in texts:
        expected = tokens.words(text)
        total += len(expected)
        joined = " ".join(expected)
        simple = lexemes_of(conn.execute("SELECT to_tsvector('simple', %s)::text", (joined,)).fetchone()[0])
        literal = lexemes_of(conn.execute("SELECT %s::tsvector::text", (pgwords.fact_vector(text, "")[0],)).fetchone()[0])
        literal = [w for w in literal]
        raw = lexemes_of(conn.execute("SELECT to_tsvector('simple', %s)::text", (text,)).fetchone()[0])
        if simple != expected:
            simple_bad.append((text, expected, simple))
        if literal != expected + tokens.words(tokens.cjk_chars(text)):
            literal_bad.append((text, expected, literal))
        if raw != expected:
            raw_bad.append((text, expected, raw))
    print(f"  {len(texts)} texts, {total} FTS5 tokens")
    print(f"  to_tsvector('simple', raw text)          differs from FTS5 on {len(raw_bad)} texts")
    print(f"  to_tsvector('simple', Python-folded)     differs from FTS5 on {len(simple_bad)} texts")
    print(f"  tsvector literal of Python-folded words  differs from FTS5 on {len(literal_bad)} texts")
    for label, bad in (("raw", raw_bad), ("simple(folded)", simple_bad), ("literal", literal_bad)):
        for text, expected, got in bad[:3]:
            gone = [w for w in expected if w not in got]
            extra = [w for w in got if w not in expected]
            print(f"    {label}: {text[:60]!r}: FTS5-only {gone[:6]} PG-only {extra[:6]}")


def demos(conn) -> None:
    facts = [
        (1, "deploy", "Deployments go through the staging branch; deployed by CI"),
        (2, "configuração", "A configuração do servidor fica em /etc/app"),
        (3, "会議", "東京都庁の会議は毎週月曜日です"),
        (4, "across runs", "東京都 then 会議室: two runs, apart"),
        (5, "unrelated", "nothing here"),
    ]
    pgwords.load(conn, [(i, t, x) for i, t, x in facts])
    def ids(query: str) -> list[int]:
        return [row[0] for row in conn.execute("SELECT id FROM facts WHERE words @@ %s::tsquery ORDER BY id", (query,))]
    def simple(query: str) -> list[int]:
        return [row[0] for row in conn.execute("SELECT id FROM facts WHERE words @@ to_tsquery('simple', %s) ORDER BY id", (query,))]
    print(f"  to_tsquery('simple', 'deploy:*')          -> {simple('deploy:*')}")
    print(f"  'deploy':*  (literal)                     -> {ids(chr(39) + 'deploy' + chr(39) + ':*')}")
    folded = tokens.fold("configuracao")
    print(f"  typed 'configuracao', folded {folded!r}       -> {ids(pgwords.lexeme(folded))}")
    print(f"  typed 'Configuração', folded {tokens.fold('Configuração')!r}       -> {ids(pgwords.lexeme(tokens.fold('Configuração')))}")
    print(f"  to_tsquery('simple', 'configuração') (unfolded, no unaccent) -> {simple('configuração')}")
    lite = store.connect(":memory:")
    with store.writing(lite):
        for i, t, x in facts:
            lite.execute("INSERT INTO facts (id, topic, kind, text, date, created, updated, confirmed)"
                         " VALUES (?, ?, 'state', ?, '2026-01-01', '', '', '')", (i, t, x))
    for run in ("会議", "都庁", "都会", "月曜日", "東京都庁の会議は毎週月曜日です"):
        q = " <-> ".join(f"{pgwords.lexeme(ch)}:C" for ch in run)
        fts5 = sorted(row[0] for row in lite.execute("SELECT rowid FROM facts_fts WHERE facts_fts MATCH ?",
                                                        ("cjk : " + '"' + " ".join(run) + '"',)))
        print(f"  CJK phrase {run} ({q[:40]}...) -> {ids(q)}; FTS5 cjk column -> {fts5}")
    conn.execute("DROP TABLE facts, vocab, postings, counters; DROP FUNCTION phrase_freq")


def jaccard(a: list[int], b: list[int]) -> float:
    sa, sb = set(a), set(b)
    return 1.0 if not sa and not sb else len(sa & sb) / len(sa | sb)


def compare(conn) -> None:
    observations = json.loads((DATA / "seed-data.json").read_text())["observations"]
    queries = json.loads((DATA / "test-queries.json").read_text())["queries"]
    lite = store.connect(":memory:")
    retrieval.build(lite, observations)
    facts = [(o["id"], *retrieval.observation_fact(o)[0:3:2]) for o in observations]
    pgwords.load(conn, facts)
    # The same tokens on both sides: FTS5's vocabulary against the tsvectors'.
    fts_vocab = {row[0]: row[1] for row in lite.execute("SELECT term, doc FROM facts_vocab")}
    pg_vocab = {row[0]: row[1] for row in conn.execute("SELECT term, docs FROM vocab")}
    print(f"  vocabulary: FTS5 {len(fts_vocab)} terms, PostgreSQL {len(pg_vocab)}; same terms and doc counts: {fts_vocab == pg_vocab}")
    rankers = ["bm25", "bm25_sql", "bm25_postings", "bm25_fast", "ts_rank", "ts_rank_cd"]
    scores = {r: [] for r in rankers}
    recall = {r: [] for r in ["sqlite", *rankers]}
    differ = {r: [] for r in rankers}
    for q in queries:
        mine = search.by_words(lite, q["query"])
        wanted = set(q["relevant_ids"])
        recall["sqlite"].append(len(set(mine) & wanted) / len(wanted))
        for ranker in rankers:
            theirs = pgwords.by_words(conn, q["query"], ranker=ranker)
            recall[ranker].append(len(set(theirs) & wanted) / len(wanted))
            j = jaccard(mine, theirs)
            scores[ranker].append((j, mine == theirs))
            if j < 1:
                differ[ranker].append((q["id"], q["query"], mine, theirs))
    n = len(queries)
    print(f"  {n} queries, top 8 by words (the whole tier logic and judgement) on SQLite vs PostgreSQL:")
    print(f"  {'ranker':<13} {'mean Jaccard':>12} {'same set':>9} {'same order':>10} {'R@8 PG':>7} (R@8 SQLite {sum(recall['sqlite']) / n:.3f})")
    for ranker in rankers:
        js = scores[ranker]
        print(f"  {ranker:<13} {sum(j for j, _ in js) / n:12.3f} {sum(j == 1 for j, _ in js):9d} {sum(s for _, s in js):10d} {sum(recall[ranker]) / n:7.3f}")
    # The same without the judgement: the first 8 candidates in tier order, nothing cut.
    print("  without the judgement (first 8 candidates in tier order), mean Jaccard against SQLite's:")
    for ranker in rankers:
        js = []
        for q in queries:
            mine = [c.id for c in search._candidates(lite, q["query"])][:8]
            theirs = [c.id for c in pgwords.candidates(conn, q["query"], ranker=ranker)][:8]
            js.append(jaccard(mine, theirs))
        print(f"  {ranker:<13} {sum(js) / n:.3f} ({sum(j == 1 for j in js)} of {n} the same set)")
    # Why: the judgement keeps a candidate whose score is at least RELATIVE (0.3) of the best; on
    # ts_rank's scale a fact holding the word once in its text scores far below one holding it
    # in its topic.
    for typed in ("Kafka", "validation"):
        for ranker in rankers:
            pool = pgwords.candidates(conn, typed, ranker=ranker)
            best = max(c.score for c in pool)
            shares = ", ".join(f"{c.id}:{c.score / best:.2f}" for c in pool[:8])
            print(f"  {typed!r} {ranker}: score / best of the first candidates: {shares}")
    for ranker in rankers:
        for qid, text, mine, theirs in differ[ranker][:12]:
            print(f"    {ranker} {qid} {text!r}: SQLite {mine} | PG {theirs}")


EXTRA = [
    ("会議", "東京都庁の会議は毎週月曜日です。会議室は3階"),
    ("Reunião semanal", "A reunião de configuração do banco de dados é às segundas"),
    ("PR review", "Every pull request needs one review; the pull request template lives in .github"),
    ("k8s", "Kubernetes pods restart when the liveness probe fails; kubectl rollout restart"),
    ("混合 mixed", "deploy 部署 the 服务 with 東京 region; deployment 完成"),
]
EXTRA_QUERIES = ["会議", "月曜日 会議", "東京", "部署 deploy", "pr review", "bd configuracao", "configuração",
                 "k8s pods", "kubernetes", "pull request template", "reunião"]


def scores(conn) -> None:
    """bm25 itself: FTS5's rank of every candidate of the any-term expression against the one
    PostgreSQL computes, on the seed facts plus a few CJK, Portuguese and multi-word facts."""
    observations = json.loads((DATA / "seed-data.json").read_text())["observations"]
    queries = [q["query"] for q in json.loads((DATA / "test-queries.json").read_text())["queries"]] + EXTRA_QUERIES
    lite = store.connect(":memory:")
    retrieval.build(lite, observations)
    facts = [(o["id"], *retrieval.observation_fact(o)[0:3:2]) for o in observations]
    with store.writing(lite):
        for n, (topic, text) in enumerate(EXTRA, start=1001):
            lite.execute("INSERT INTO facts (id, topic, kind, text, date, created, updated, confirmed)"
                         " VALUES (?, ?, 'state', ?, '2026-01-01', '', '', '')", (n, topic, text))
            facts.append((n, topic, text))
    conn.execute("DROP TABLE facts, vocab, postings, counters; DROP FUNCTION phrase_freq")
    pgwords.load(conn, facts)
    worst, same_ids, same_answer, total = 0.0, 0, 0, 0
    for typed in queries:
        parsed = fts.parse(typed)
        for every in (False, True):
            mine = {row[0]: row[1] for row in search._match(lite, parsed.expression(every=every).text, 60)}
            for ranker in ("bm25_sql", "bm25_postings", "bm25_fast"):
                theirs = {row[0]: row[1] for row in pgwords.match(conn, pgwords.Expression(parsed, every=every), 60, 0, ranker)}
                total += 1
                same_ids += set(mine) == set(theirs)
                for rowid in set(mine) & set(theirs):
                    worst = max(worst, abs(mine[rowid] - theirs[rowid]))
        for ranker in ("bm25_sql", "bm25_postings", "bm25_fast"):
            same_answer += search.by_words(lite, typed) == pgwords.by_words(conn, typed, ranker=ranker)
    print(f"  {len(queries)} queries ({len(EXTRA_QUERIES)} of them CJK, Portuguese, abbreviations, multi-word forms),"
          f" any-term and every-term expressions: {same_ids}/{total} the same candidates,"
          f" largest |FTS5 rank - PG bm25| {worst:.2e}; by_words answer identical for {same_answer}/{3 * len(queries)}"
          " (bm25_sql, bm25_postings, bm25_fast, each query)")
    for typed in EXTRA_QUERIES[:6]:
        print(f"    {typed!r}: SQLite {search.by_words(lite, typed)} | PG {pgwords.by_words(conn, typed, ranker='bm25_sql')} | PG postings {pgwords.by_words(conn, typed, ranker='bm25_postings')}")


def main() -> None:
    with pg.Server() as server, psycopg.connect(server.url(), autocommit=True) as conn:
        print("A. tokens: FTS5 unicode61 remove_diacritics 2 (gate/engine/tokens.py) against PostgreSQL")
        observations = json.loads((DATA / "seed-data.json").read_text())["observations"]
        seed = [" ".join(retrieval.observation_fact(o)[0:3:2]) for o in observations]
        identity(conn, seed + TRICKY + random_texts(300))
        print("B. prefix, accents, CJK")
        demos(conn)
        print("C. ranking: the 200 facts and 30 queries of bench/retrieval.py")
        compare(conn)
        print("D. bm25 values: FTS5's rank against the SQL emulation")
        scores(conn)


if __name__ == "__main__":
    main()
