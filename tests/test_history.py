import pytest

from gate.memory import audit, history, ledger


def test_entry_names_are_a_write_prefix_and_a_fact_id():
    assert history.entry_name("3b8747aa529b41bea0052d9fa99b3869", 12) == "3b8747aa:12"
    assert history.parse_entry(" 3B8747AA:12 ") == ("3b8747aa", 12)
    assert history.parse_entry("3b8747aa529b41bea0052d9fa99b3869:1") == ("3b8747aa529b41bea0052d9fa99b3869", 1)


@pytest.mark.parametrize("bad", ["", "12", "3b8747aa", "3b87:12", "3b8747aa:0", "3b8747aa:-1", "zzzzzzzz:1", "3b8747aa:1:2"])
def test_anything_else_is_not_an_entry(bad):
    with pytest.raises(history.BadEntry, match="give WRITE:FACT as `memory-gate log` prints it"):
        history.parse_entry(bad)


def test_a_fact_history_is_its_committed_changes_oldest_first(file_conn, file_writer, db_path):
    ledger.open_turn(file_conn, "s-h", "p1", "first words")
    file_writer.caller = file_writer.caller.__class__("s-h")
    fact = file_writer.insert("deploy", "Deploys go through staging.")
    other = file_writer.insert("other", "Unrelated.")
    file_writer.search("deploy")
    file_writer.write([{"op": "update", "id": fact, "text": "Deploys go through prod."}])
    log = audit.log_path(db_path)
    audit.append(log, [{"write": "never", "op": "delete", "id": fact}])  # never committed
    with open(log, "a") as handle:
        handle.write('{"torn')
    found = list(history.changes(file_conn, log, fact))
    assert [change.op for change in found] == ["insert", "update"]
    assert found[0].entry["words"] == "first words" and found[0].line == 1
    data = found[1].to_json()
    assert data["entry"] == found[1].name and data["why"] == "first words"
    assert data["before"]["text"] == "Deploys go through staging." and data["after"]["text"] == "Deploys go through prod."
    assert [change.op for change in history.changes(file_conn, log, other)] == ["insert"]


def test_a_fact_history_reads_only_lines_naming_its_id_whatever_their_spacing(file_conn, file_writer, db_path):
    """Lines are searched for the id before they are parsed: fact 1's history holds neither fact
    12's lines nor misses one a person rewrote without spaces."""
    ids = [file_writer.insert("note", f"Note {i}.") for i in range(12)]
    log = audit.log_path(db_path)
    lines = log.read_text().splitlines()
    first = next(line for line in lines if '"id": 1,' in line)
    log.write_text("\n".join(line if line != first else first.replace('"id": 1,', '"id":1,') for line in lines) + "\n")
    assert [change.entry["id"] for change in history.changes(file_conn, log, ids[0])] == [1]
    assert [change.entry["id"] for change in history.changes(file_conn, log, ids[11])] == [12]


def test_replay_follows_revisions_and_bookkeeping():
    def change(op, **entry):
        return history.Change(1, {"op": op, "time": "T0", **entry})

    life = history.replay([change("insert", after={"text": "a"}), change("update", after={"text": "b"}),
                           change("update", after={"text": "c"}), change("delete")])
    assert (life.fields, life.created, life.rev) == (None, "T0", 3)
    life = history.replay([change("insert", after={"text": "a"}, bookkeeping={"created": "T-9", "rev": 7})])
    assert (life.created, life.rev) == ("T-9", 7)
