"""Finding facts: the agent's words parsed into a query, ranked by words (FTS5 bm25) and, with an
embeddings endpoint, by meaning (sqlite-vec vectors), then judged worth the agent's context.

`embeddings` and `transport` are the client of the embeddings endpoint; `vectors` keeps each fact's
vector in step with its text (the write path calls it too).

May import: gate.engine and the ground floor. Never the hooks' path.
"""
