"""The owner's words of a turn embedded while the agent is still thinking, before its first search.

A search asks two queries, the agent's terms and what the owner wrote this turn
(gate.search.lookup.queries_for), and the owner's words are the longer: up to OWNER_CHARS, about
150 tokens, which the model in the server's process takes about 0.36 s to embed on one core,
against 20-30 ms for the terms. They are known as soon as the prompt hook opens the turn in the
ledger, seconds before the agent's first search, while the server sits idle. So the server looks
at the ledger's newest turn every EVERY seconds (one indexed row, under the lock the tool calls
take, microseconds) and, for a turn it has not seen, embeds the owner's words then, into the
vectors the endpoint remembers (gate.search.lookup.embed): the turn's first search finds them
there and embeds its terms only. The hooks are untouched: they learn nothing of the server here.

Which session the turn is of does not matter: a turn of another session sharing the project's
memory costs the model its time, never an answer (a search still embeds what it does not find).
"""

from __future__ import annotations

import apsw

from gate.search import embeddings, lookup

# How often the server looks for a new turn (seconds): well under the seconds between a prompt
# and the agent's first search, and a query of one row a time.
EVERY = 0.2


def newest_prompt(conn: apsw.Connection) -> tuple[int, str] | None:
    """The newest turn that holds the owner's words: its id and the words a search asks."""
    row = conn.execute("SELECT id, prompt FROM turns WHERE prompt IS NOT NULL ORDER BY id DESC LIMIT 1").fetchone()
    if row is None:
        return None
    return row[0], lookup.owner_words(row[1])


def foresee(words: str, endpoint: embeddings.Endpoint) -> bool:
    """Embed the owner's words into the vectors the endpoint remembers, unless they are there;
    whether the model was asked. Quiet when it fails: the search asks again and says why."""
    if not words or endpoint.remembered.get(words) is not None:
        return False
    lookup.remember(endpoint, [words])
    return True
