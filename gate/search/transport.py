"""One JSON POST to a model endpoint (embeddings, chat), bounded by a deadline as a whole.

A socket time-out alone bounds each read, so a server that trickles its answer a byte at a time
could hold a turn indefinitely; here the whole request, answer included, must be done before
the deadline. The standard library only, and http.client is imported on first use: the per-turn
paths that may never call an endpoint do not pay for it.
"""

from __future__ import annotations

import time

from gate import credentials, jsonlite


class Unanswered(Exception):
    """No usable answer. str() is a short reason to put after the endpoint's name ("did not
    answer in time", "unreachable (connection refused)", ...); `timed_out` tells a time-out."""

    def __init__(self, reason: str, *, timed_out: bool = False):
        super().__init__(reason)
        self.timed_out = timed_out


def post_json(url: str, body: bytes, deadline: float, *, limit: int) -> tuple[int, bytes]:
    """POST `body` (JSON) to `url`; the status and the whole answer, at most `limit` bytes, all
    before `deadline` (a time.monotonic() value). Raises Unanswered."""
    import http.client
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        assert parts.hostname is not None, "config checked that the URL names a server"
        connection = kind(parts.hostname, parts.port, timeout=left(deadline))
        try:
            path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            headers = {"Content-Type": "application/json", "Accept": "application/json"}
            connection.request("POST", path, body, headers)
            sock = connection.sock  # getresponse() may hand the socket over to the response
            sock.settimeout(left(deadline))
            response = connection.getresponse()
            chunks, size = [], 0
            while True:
                sock.settimeout(left(deadline))
                chunk = response.read1(1 << 16)
                if not chunk:
                    break
                size += len(chunk)
                if size > limit:
                    raise Unanswered(f"answered more than {limit >> 20} MiB")
                chunks.append(chunk)
            return response.status, b"".join(chunks)
        finally:
            connection.close()
    except TimeoutError:
        raise Unanswered("did not answer in time", timed_out=True) from None
    except http.client.HTTPException as error:
        raise Unanswered(f"broke off its answer ({type(error).__name__})") from None
    except OSError as error:
        reason = (error.strerror or type(error).__name__).lower()
        raise Unanswered(f"unreachable ({reason})") from None


def left(deadline: float) -> float:
    """Seconds until `deadline`; TimeoutError once it has passed."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError
    return remaining


def server_says(payload: bytes) -> str:
    """': <the server's error message>' from an OpenAI-style error answer, or ''."""
    try:
        message = jsonlite.loads(payload.decode("utf-8", "replace"))["error"]["message"]
    except (ValueError, KeyError, TypeError):
        return ""
    # Masked before it is cut short: a server may quote the key it refused, and a key cut in two
    # no longer looks like one. The message reaches the agent's answer and stats' records.
    message = credentials.redact_echo(" ".join(str(message).split()))
    return f": {message[:80]}" if message else ""
