from datetime import datetime, timezone

from gate.engine.listing import SqliteListing, topic_match
from gate.memory import listing


def stamp(conn, fact, updated, confirmed):
    conn.execute("UPDATE facts SET updated = ?, confirmed = ? WHERE id = ?", (updated, confirmed, fact))


def test_facts_come_newest_change_first_and_filter(writer):
    a = writer.insert("deploy", "Deploys go through staging.")
    b = writer.insert("deploy script", "scripts/deploy.sh needs DEPLOY_ENV.", kind="trap")
    c = writer.insert("cache", "The cache is Redis.", kind="decision")
    stamp(writer.conn, a, "2026-03-01T00:00:00Z", "2026-03-01T00:00:00Z")
    stamp(writer.conn, b, "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z")
    stamp(writer.conn, c, "2026-02-01T00:00:00Z", "2026-02-01T00:00:00Z")
    ids = lambda **filters: [fact.id for fact in SqliteListing(writer.conn).facts(**filters)]  # noqa: E731
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
    assert [fact.id for fact in SqliteListing(writer.conn).unconfirmed(before)] == [b, a]
    assert SqliteListing(writer.conn).count_unconfirmed(before) == 2


def test_pages_topic_words_and_unconfirmed_filter_as_the_viewer_asks(writer):
    a = writer.insert("staging deploys", "Deploys go through staging.")
    b = writer.insert("deploy script", "scripts/deploy.sh needs DEPLOY_ENV.", kind="trap")
    c = writer.insert("Café menu", "The café opens at eight.", kind="event")
    stamp(writer.conn, a, "2026-03-01T00:00:00Z", "2026-01-01T00:00:00Z")
    stamp(writer.conn, b, "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z")
    stamp(writer.conn, c, "2026-01-01T00:00:00Z", "2026-03-01T00:00:00Z")
    ids = lambda **filters: [fact.id for fact in SqliteListing(writer.conn).facts(**filters)]  # noqa: E731
    assert ids(limit=2, offset=1) == [b, c] and ids(offset=2) == [c]
    assert ids(topic_words="DEPLO") == [a, b] and ids(topic_words="stag depl") == [a]
    assert ids(topic_words="cafe") == [c]  # accents folded, as the word index folds them
    assert ids(topic_words="ploy") == []  # words that start so, not letters anywhere
    assert ids(topic_words='"') == [] and ids(topic_words="-") == []  # no word: LIKE, nothing holds it
    assert ids(unconfirmed_before="2026-02-01T00:00:00Z") == [a]
    assert SqliteListing(writer.conn).count() == 3
    assert SqliteListing(writer.conn).count(topic_words="deploy", kind="trap") == 1
    assert topic_match('say "hi"') == 'topic : ("say"* "hi"*)'
