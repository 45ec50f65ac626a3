"""Credentials in old data are masked wherever the viewer shows text, by gate.credentials' own
detector, and prose about secrets is left alone."""

import dataclasses

import pytest

from gate import credentials
from gate.view.redact import redact

GITHUB = "ghp_" + "a1B2" * 9
CASES = [
    (f"CI pushes with {GITHUB} nightly", GITHUB, "CI pushes with [redacted: a GitHub token] nightly"),
    ("set password=hunter2222x in the env", "hunter2222x", "set password=[redacted: a password or key] in the env"),
    ("db at postgres://app:s3cr3tpw@db.internal/app", "s3cr3tpw", "db at postgres://app:[redacted: a password]@db.internal/app"),
    ("key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----\nend", "MIIEow", "key:\n[redacted: a private key]\nend"),
    ("AKIAABCDEFGHIJKLMNOP is the key id", "AKIAABCDEFGHIJKLMNOP", "[redacted: an AWS access key id] is the key id"),
]


@pytest.mark.parametrize("text, secret, shown", CASES)
def test_a_credential_is_masked_and_the_rest_kept(text, secret, shown):
    assert credentials.find(text) is not None  # the detector that refuses it on the way in
    masked = redact(text)
    assert secret not in masked and masked == credentials.redact(text) and "[redacted: " in masked
    # The rest of the text stays readable.
    kept = shown.split("[redacted: ")[0]
    assert masked.startswith(kept)


@pytest.mark.parametrize("text", [
    "The deploy token lives in the team vault.",
    "Rotate PASSWORD yearly; the value is ${DB_PASSWORD}.",
    "token: optional",
    "",
])
def test_prose_about_secrets_is_left_alone(text):
    assert redact(text) == text


def test_none_reads_as_empty():
    assert redact(None) == ""


def test_a_credential_an_embeddings_endpoint_quotes_in_its_error_is_masked_on_the_search_page(conn):
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from pathlib import Path

    from gate.engine import store
    from gate.memory.opening import Opened
    from gate.search import embeddings
    from gate.view import pages, reading
    from gate.view.access import Guard

    key = "sk-ant-api03-" + "Q" * 40

    class Refusing(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            body = json.dumps({"error": {"message": f"key {key} refused"}}).encode()
            self.send_response(500)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Refusing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        store.load_vectors(conn)
        with store.writing(conn):
            conn.execute("INSERT INTO facts (topic, kind, text, date, created, updated, confirmed)"
                         " VALUES ('deploy', 'state', 'Deploys go through staging.', '2026-01-01', '', '', '')")
        endpoint = embeddings.Endpoint(f"http://127.0.0.1:{server.server_address[1]}/v1/embeddings", "e5", None,
                                       quiet_after_timeout=0.0)
        found = reading.find(Opened(Path(":memory:"), conn), "deploy staging", endpoint)
        # Masked where the endpoint's words are read (gate/search/transport.py), for the agent and stats too.
        assert not any(key in note for note in found.notes) and any("HTTP 500" in note for note in found.notes)
        html = pages.search(Guard(port=1), found)
        assert key not in html and "[redacted: " in html and "HTTP 500" in html
        # And the page masks a note on its own, whatever hands it one.
        raw = dataclasses.replace(found, notes=[f"words only: embeddings endpoint answered HTTP 500: key {key} refused"])
        html = pages.search(Guard(port=1), raw)
        assert key not in html and "[redacted: " in html and "HTTP 500" in html
    finally:
        server.shutdown()
        server.server_close()
