"""tsvector's limits against a fact of 600 characters: lexeme length, positions per lexeme.

    .venv/bin/python spike/s2_limits.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import psycopg

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]
import pg  # noqa: E402
import pgwords  # noqa: E402

from gate.engine import tokens  # noqa: E402

with pg.Server() as server, psycopg.connect(server.url(), autocommit=True) as conn:
    long_word = "\U00020000" * 600  # CJK extension B: 4 bytes a letter, one unicode61 token
    print("600 letters of CJK ext. B: FTS5 tokens", len(tokens.words(long_word)), "of", len(tokens.words(long_word)[0].encode()), "bytes")
    try:
        conn.execute("SELECT %s::tsvector", (pgwords.fact_vector("t", long_word)[0],))
        print("  as a tsvector lexeme: accepted")
    except psycopg.Error as error:
        print(f"  as a tsvector lexeme: {type(error).__name__}: {str(error).strip()}")
    text = " ".join(["a"] * 300)  # 599 characters
    literal, count = pgwords.fact_vector("t", text)
    kept = conn.execute("SELECT array_length((SELECT positions FROM unnest(%s::tsvector) WHERE lexeme = 'a'), 1)",
                        (literal,)).fetchone()[0]
    print(f"'a' 300 times (599 characters): FTS5 counts 300 instances, the tsvector keeps {kept} positions")
