import io
import json
import tracemalloc

import pytest

from gate.engine import store
from gate.engine.listing import SqliteListing
from gate.memory import audit, changeset, factlines, history, ledger, transfer, undo
from gate.memory.stores import LocalStore
from gate.search import embeddings, fulltext as search, vectors


def exported(conn) -> str:
    out = io.StringIO()
    transfer.export(conn, out)
    return out.getvalue()


def facts(conn):
    return list(conn.execute(f"SELECT {', '.join(factlines.COLUMNS)} FROM facts ORDER BY id"))


def do_import(conn, text, log=None, **options):
    return transfer.import_into(conn, io.StringIO(text), LocalStore(conn, log), command="memory-gate import facts.jsonl", **options)


@pytest.fixture
def source(file_conn, file_writer):
    """A memory with history: inserts, an update, a delete, a kept fact (confirmed later)."""
    ledger.open_turn(file_conn, "s-src", "p1", "note the deploy facts")
    file_writer.caller = file_writer.caller.__class__("s-src")
    a = file_writer.insert("deploy", "Deploys go through staging.")
    b = file_writer.insert("release", "v2 shipped.", kind="event", date="2026-03-01")
    c = file_writer.insert("cache", "The cache is Redis.", kind="decision")
    file_writer.insert("trap", "Multi-line\ntext, accents é, 日本語 and \"quotes\".", kind="trap")
    file_writer.search("deploy cache")
    file_writer.write([{"op": "update", "id": a, "text": "Deploys go through prod."}, {"op": "delete", "id": c}])
    file_conn.execute("UPDATE facts SET confirmed = '2027-01-01T00:00:00Z' WHERE id = ?", (b,))
    return file_conn


def test_a_round_trip_reproduces_every_fact_exactly(source, tmp_path):
    text = exported(source)
    assert [json.loads(line)["id"] for line in text.splitlines()] == [1, 2, 4]
    target = store.connect(tmp_path / "b" / "memory.db")
    result = do_import(target, text, log=audit.log_path(tmp_path / "b" / "memory.db"))
    assert (result.inserted, result.skipped, result.ids) == (3, 0, (1, 4))
    assert facts(target) == facts(source)
    assert exported(target) == text
    # The derived indexes follow: the imported facts are found.
    assert search.by_words(target, "prod") == [1]


def test_export_changes_nothing_and_logs_nothing(source, db_path):
    log = audit.log_path(db_path).read_text()
    before = facts(source)
    exported(source)
    assert facts(source) == before and audit.log_path(db_path).read_text() == log


def test_every_imported_fact_is_logged_by_the_command_line_and_can_be_undone(source, tmp_path):
    path = tmp_path / "b" / "memory.db"
    target = store.connect(path)
    result = do_import(target, exported(source), log=audit.log_path(path))
    lines = [json.loads(line) for line in audit.log_path(path).read_text().splitlines()]
    assert [line["id"] for line in lines] == [1, 2, 4] and {line["write"] for line in lines} == {result.write_id}
    for line in lines:
        assert line["op"] == "insert" and line["session"] == changeset.CLI_SESSION
        assert line["words"] == "memory-gate import facts.jsonl" and line["bookkeeping"]["rev"] >= 1
    assert audit.check(target, audit.log_path(path)).ok
    assert target.execute("SELECT changes FROM writes WHERE id = ?", (result.write_id,)).fetchone()[0] == 3
    # Out again, and back with its bookkeeping, by undo.
    undo.undo(target, audit.log_path(path), history.entry_name(result.write_id, 1), command="memory-gate undo")
    assert target.execute("SELECT count(*) FROM facts WHERE id = 1").fetchone()[0] == 0
    redo = json.loads(audit.log_path(path).read_text().splitlines()[-1])
    undo.undo(target, audit.log_path(path), history.entry_name(redo["write"], 1), command="memory-gate undo")
    created, rev = target.execute("SELECT created, rev FROM facts WHERE id = 1").fetchone()
    assert created == source.execute("SELECT created FROM facts WHERE id = 1").fetchone()[0] and rev == 3


def test_importing_twice_skips_every_duplicate_and_says_so(source, tmp_path):
    target = store.connect(tmp_path / "b.db")
    text = exported(source)
    do_import(target, text)
    again = do_import(target, text)
    assert (again.inserted, again.skipped, again.skipped_lines, again.write_id) == (0, 3, [1, 2, 3], None)
    assert len(facts(target)) == 3


def test_a_duplicate_is_the_same_topic_kind_and_text_whatever_its_id(writer):
    writer.insert("deploy", "Deploys go through staging.")
    lines = [
        {"topic": "deploy", "kind": "state", "text": "Deploys go through staging."},  # duplicate
        {"topic": "deploy", "kind": "trap", "text": "Deploys go through staging."},  # another kind
        {"topic": "other", "kind": "state", "text": "A new fact."},
        {"topic": "other", "kind": "state", "text": "A new fact."},  # equal lines of one file both go in
    ]
    result = do_import(writer.conn, "".join(json.dumps(line) + "\n" for line in lines))
    assert (result.inserted, result.skipped, result.skipped_lines) == (3, 1, [1])
    assert writer.conn.execute("SELECT count(*) FROM facts WHERE topic = 'other'").fetchone()[0] == 2


def test_an_id_held_by_another_fact_refuses_the_file_unless_new_ids(writer):
    writer.insert("deploy", "Deploys go through staging.")
    text = json.dumps({"id": 1, "topic": "cache", "kind": "state", "text": "Redis."}) + "\n"
    refused = pytest.raises(factlines.Refused, do_import, writer.conn, text).value
    assert "line 1: id 1 is another fact's here ([1] deploy)" in str(refused) and "--new-ids" in str(refused)
    assert len(facts(writer.conn)) == 1
    result = do_import(writer.conn, text, new_ids=True)
    assert result.ids == (2, 2)


@pytest.mark.parametrize(
    "line, expected",
    [
        ({"topic": "t", "kind": "state", "text": "x" * 601}, "text is 601 characters; at most 600 fit"),
        ({"topic": "t", "kind": "note", "text": "x"}, 'kind "note" is not one of the four'),
        ({"topic": "t", "kind": "state", "text": "x", "date": "2026-02-30"}, 'date "2026-02-30" is not a day'),
        ({"topic": "t", "kind": "state"}, "text is missing"),
        ({"topic": "t", "kind": "state", "text": "x", "colour": "red"}, 'remove "colour"'),
        ({"id": -4, "topic": "t", "kind": "state", "text": "x"}, "id is -4: give a positive integer"),
        ({"topic": "t", "kind": "state", "text": "x", "created": "yesterday"}, "created is \"yesterday\": write a UTC time"),
        ({"topic": "t", "kind": "state", "text": "x", "rev": 0}, "rev is 0"),
        ({"id": 2**63 - 1, "topic": "t", "kind": "state", "text": "x"}, "id 9223372036854775807 is past 2147483647, the largest id import takes"),
        ({"topic": "t", "kind": "state", "text": "x", "rev": 2**63 - 1}, "rev is 9223372036854775807: give a positive integer up to 2147483647"),
        ({"topic": "t", "kind": "state", "text": "x", "date": "9999-12-31"}, "date 9999-12-31 is outside 1900-01-01 to 2099-12-31"),
        ({"topic": "t", "kind": "state", "text": "x", "created": "9999-12-31T00:00:00Z"}, 'created is "9999-12-31T00:00:00Z": write a UTC time'),
        ({"topic": "t", "kind": "state", "text": "x", 'a\nkey': 1}, 'remove "a\\nkey"'),
        ([1, 2], "[1, 2] is not a fact"),
        ("{not json", "not JSON"),
    ],
)
def test_a_bad_line_refuses_the_whole_file_with_its_number(writer, line, expected):
    good = json.dumps({"topic": "fine", "kind": "state", "text": "A good fact."})
    bad = line if isinstance(line, str) else json.dumps(line)
    message = str(pytest.raises(factlines.Refused, do_import, writer.conn, f"{good}\n\n{bad}\n").value)
    assert message.startswith("import refused, nothing was changed.")
    assert f"line 3: {expected}" in message
    assert facts(writer.conn) == []


def test_a_credential_refuses_the_file_and_is_never_repeated(file_conn, db_path):
    token = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
    text = json.dumps({"topic": "bot", "kind": "state", "text": f"the bot token is {token}"}) + "\n"
    message = str(pytest.raises(factlines.Refused, do_import, file_conn, text, log=audit.log_path(db_path)).value)
    assert "line 1: text holds what looks like a GitHub token" in message and token not in message
    assert facts(file_conn) == [] and not audit.log_path(db_path).exists()


def test_every_problem_is_named_up_to_a_limit(writer):
    text = "".join(json.dumps({"topic": "t", "kind": "bad", "text": "x"}) + "\n" for _ in range(30))
    refused = pytest.raises(factlines.Refused, do_import, writer.conn, text).value
    assert len(refused.problems) == transfer.LISTED and refused.more == 10
    assert "line 20:" in str(refused) and "and 10 more" in str(refused)


def test_repeated_ids_in_one_file_are_named(writer):
    text = "".join(json.dumps({"id": 7, "topic": "t", "kind": "state", "text": f"x{i}"}) + "\n" for i in range(3))
    assert "lines 1, 2, 3 all give id 7" in str(pytest.raises(factlines.Refused, do_import, writer.conn, text).value)


def test_lines_written_by_hand_need_topic_kind_and_text_only(writer):
    text = json.dumps({"topic": "deploy", "kind": "state", "text": "Deploys go through staging."}) + "\n"
    result = do_import(writer.conn, text, today="2026-05-01")
    date, rev, created, confirmed = writer.conn.execute(
        "SELECT date, rev, created, confirmed FROM facts WHERE id = ?", (result.ids[0],)).fetchone()
    assert (date, rev) == ("2026-05-01", 1) and created == confirmed


def test_a_dry_run_changes_nothing(source, tmp_path):
    target = store.connect(tmp_path / "b.db")
    result = do_import(target, exported(source), dry_run=True)
    assert result.inserted == 3 and result.write_id is None and facts(target) == []


def test_imported_facts_get_their_vectors(source, tmp_path, fake_embeddings):
    target = store.connect(tmp_path / "b.db")
    if not store.load_vectors(target):
        pytest.skip("sqlite-vec cannot be loaded here")
    do_import(target, exported(source))
    endpoint = embeddings.Endpoint(fake_embeddings.url, "bge-m3")
    seen = []
    embedded, waiting = transfer.embed_waiting(target, endpoint, batch=2, progress=lambda d, t: seen.append((d, t)))
    assert (embedded, waiting) == (3, 0) and seen == [(2, 3), (3, 3)]
    query = endpoint.embed(["Deploys go through prod."], role=embeddings.QUERY, timeout=5)
    assert vectors.nearest(target, query, max_distance=0.5, limit=1) == [1]


def test_vectors_wait_when_the_endpoint_is_down(source, tmp_path, down_url):
    target = store.connect(tmp_path / "b.db")
    if not store.load_vectors(target):
        pytest.skip("sqlite-vec cannot be loaded here")
    do_import(target, exported(source))
    assert transfer.embed_waiting(target, embeddings.Endpoint(down_url, "bge-m3"), timeout=2) == (0, 3)


# -- a large memory: rows stream, never a list of them ------------------------------------------------

BIG = 20_000


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    conn = store.connect(tmp_path_factory.mktemp("big") / "memory.db")
    with store.writing(conn):
        conn.executemany(
            "INSERT INTO facts (topic, kind, text, date, created, updated, confirmed) VALUES (?, 'state', ?, '2026-01-01', ?, ?, ?)",
            ((f"topic {i % 300}", f"Fact {i} about item {i * 7 % 1000} of the project, long enough to weigh something.",
              f"2026-01-01T00:00:{i % 60:02d}Z", f"2026-{1 + i % 12:02d}-01T00:00:00Z", f"2026-{1 + i % 12:02d}-02T00:00:00Z")
             for i in range(BIG)),
        )
    yield conn
    conn.close()


class Sink(io.TextIOBase):
    """Counts what is written and keeps none of it."""

    def __init__(self):
        self.lines = 0

    def write(self, text):
        self.lines += text.count("\n")
        return len(text)


def peak(work) -> int:
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.slow
def test_export_of_a_large_memory_streams(big):
    sink = Sink()
    progress = []
    used = peak(lambda: transfer.export(big, sink, progress=lambda d, t: progress.append(d)))
    assert sink.lines == BIG and progress[-1] == BIG and len(progress) == BIG // transfer.PROGRESS_EVERY
    # 20k facts are about 2.4 MB of JSON lines; a list of them would hold several times that.
    assert used < 500_000, used


@pytest.mark.slow
def test_listing_a_large_memory_streams(big):
    rows = SqliteListing(big).facts()
    first = next(rows)
    assert first.updated.startswith("2026-12")
    used = peak(lambda: sum(1 for _ in rows))
    assert used < 200_000, used
    assert sum(1 for _ in SqliteListing(big).unconfirmed("2026-02-01T00:00:00Z")) == BIG // 12 + (BIG % 12 > 0)


def test_the_largest_id_import_takes_leaves_memory_ids_for_later_facts(writer):
    do_import(writer.conn, json.dumps({"id": factlines.MAX_ID, "topic": "t", "kind": "state", "text": "The last id."}) + "\n")
    assert writer.insert("later", "A fact written after the import.") > factlines.MAX_ID


class Endless:
    """/dev/zero as a text file: characters without end and never a line break; counts what is read."""

    def __init__(self):
        self.read = 0

    def readline(self, size=-1):
        assert 0 < size < 10**6, "read without a bound"
        self.read += size
        return "\0" * size


def test_a_line_without_end_is_refused_where_it_starts_holding_one_line_at_most():
    source = Endless()
    refused = pytest.raises(factlines.Refused, list, factlines.lines_of(source)).value
    assert refused.problems == [
        f"line 1: more than {factlines.MAX_LINE} characters, import's limit for one line (a fact's text is at most 600): "
        "give one fact per line, as export writes them."
    ]
    assert source.read <= factlines.MAX_LINE + 3
