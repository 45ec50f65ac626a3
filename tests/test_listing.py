from datetime import datetime, timezone

from gate import listing


def stamp(conn, fact, updated, confirmed):
    conn.execute("UPDATE facts SET updated = ?, confirmed = ? WHERE id = ?", (updated, confirmed, fact))


def test_facts_come_newest_change_first_and_filter(writer):
    a = writer.insert("deploy", "Deploys go through staging.")
    b = writer.insert("deploy script", "scripts/deploy.sh needs DEPLOY_ENV.", kind="trap")
    c = writer.insert("cache", "The cache is Redis.", kind="decision")
    stamp(writer.conn, a, "2026-03-01T00:00:00Z", "2026-03-01T00:00:00Z")
    stamp(writer.conn, b, "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z")
    stamp(writer.conn, c, "2026-02-01T00:00:00Z", "2026-02-01T00:00:00Z")
    ids = lambda **filters: [fact.id for fact in listing.facts(writer.conn, **filters)]  # noqa: E731
    assert ids() == [a, c, b]
    assert ids(topic="DEPLOY") == [a, b] and ids(kind="trap") == [b]
    assert ids(since="2026-02-01") == [a, c] and ids(limit=1) == [a]
    assert ids(topic="%") == [] and ids(topic="_") == []  # LIKE's wildcards are plain letters here


def test_unconfirmed_facts_come_longest_first(writer):
    a = writer.insert("a", "one")
    b = writer.insert("b", "two")
    writer.insert("c", "three")  # confirmed now
    stamp(writer.conn, a, "2026-01-01T00:00:00Z", "2026-01-05T00:00:00Z")
    stamp(writer.conn, b, "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z")
    before = listing.cutoff(30, now=datetime(2026, 3, 1, tzinfo=timezone.utc))
    assert before == "2026-01-30T00:00:00Z"
    assert [fact.id for fact in listing.unconfirmed(writer.conn, before)] == [b, a]
    assert listing.count_unconfirmed(writer.conn, before) == 2
