"""Credentials never land in what memory-gate writes or echoes: the ledger, write.log, answers,
refusals, hook output and the command line's printouts, through the real processes where the
boundary is a process (hooks, `memory-gate serve`). The values are made up, shaped as issued."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from conftest import child_env
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from gate import config
from gate.claude import hookio
from gate.cli import main as cli
from gate.engine import store
from gate.memory import audit, changeset, ledger, write
from gate.serve import tools

AWS_ID = "AKIAFAKEEXAMPLE00042"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
GITHUB = "ghp_FakeExampleToken0123456789abcdefABCD"
PASSWORD = "Hunter2-staging!"
ANTHROPIC = "sk-ant-api03-" + "FakeExampleKey0123456789" * 4 + "AA"
SECRETS = (AWS_ID, AWS_SECRET, GITHUB, PASSWORD, ANTHROPIC)
PASTED = (
    f"deploy with the AWS key {AWS_ID}, the AWS secret is {AWS_SECRET}, and GH_TOKEN_{GITHUB}; "
    f"the db password is {PASSWORD} and the model key {ANTHROPIC}"
)
PREFIX = "mcp__memory-gate__"


def leaked(text: str) -> list[str]:
    """The credentials (or any 12 characters of one) that `text` holds."""
    return [secret for secret in SECRETS
            if any(secret[at : at + 12] in text for at in range(0, len(secret) - 11))]


def hook(home, project, event, payload):
    result = subprocess.run(
        [sys.executable, "-m", "gate", "hook", event, "--tools", PREFIX],
        input=json.dumps({"cwd": str(project), **payload}), text=True, capture_output=True, cwd=project,
        env=child_env(home, CLAUDE_PROJECT_DIR=str(project)), timeout=30,
    )
    assert result.returncode == 0
    return result.stdout + result.stderr


def serve(project, home, script):
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "gate", "serve"], env=child_env(home), cwd=str(project)
    )
    result = {}

    async def main():
        async with Client(params) as client:
            result["value"] = await script(client)

    anyio.run(main)
    return result["value"]


@pytest.mark.slow
def test_a_pasted_credential_reaches_neither_the_ledger_nor_write_log_nor_an_answer(project, tmp_path):
    """A turn as Claude Code runs it: the real hook processes open it and map the calls, the real
    server answers them. The database files and write.log hold no byte of the credentials."""
    home = tmp_path / "home"
    echoed = hook(home, project, "UserPromptSubmit", {"session_id": "s1", "prompt_id": "p1", "prompt": PASTED})
    for tool_use_id, tool in (("toolu_S", "memory_search"), ("toolu_R", "memory_write"), ("toolu_W", "memory_write")):
        echoed += hook(home, project, "PreToolUse", {
            "session_id": "s1", "prompt_id": "p1", "tool_use_id": tool_use_id, "tool_name": PREFIX + tool,
            "tool_input": {},
        })

    async def script(client):
        found = await client.call_tool("memory_search", {"terms": f"deploy {GITHUB}"},
                                       meta={"claudecode/toolUseId": "toolu_S"})
        bad = {"op": "insert", "topic": "deploy", "kind": GITHUB, "text": "Deploys use the vault key.",
               "date": AWS_SECRET}
        refused = await client.call_tool("memory_write", {"ops": [bad], "kept": []},
                                         meta={"claudecode/toolUseId": "toolu_R"})
        good = {"op": "insert", "topic": "deploy", "kind": "state", "text": "Deploy keys are in the team vault."}
        wrote = await client.call_tool("memory_write", {"ops": [good], "kept": []},
                                       meta={"claudecode/toolUseId": "toolu_W"})
        return found, refused, wrote

    found, refused, wrote = serve(project, home, script)
    assert not found.is_error and refused.is_error and not wrote.is_error
    owner_words = found.structured_content["owner_words"]
    assert "[redacted: GitHub token]" in owner_words and "[redacted: AWS secret access key]" in owner_words
    assert "the db password is [redacted: password in prose]" in owner_words
    for answer in (found, refused, wrote):
        assert leaked(json.dumps(answer.structured_content or {}) + answer.content[0].text) == []
    assert "kind [redacted: GitHub token]" in refused.content[0].text.replace('"', "")
    assert leaked(echoed) == []

    path = Path(config.database_for(home, project))
    conn = store.connect(path)
    stored = conn.execute("SELECT prompt FROM turns WHERE prompt_id = 'p1'").fetchone()[0]
    assert stored.startswith("deploy with the AWS key [redacted: AWS access key id]")
    conn.close()
    line = json.loads(audit.log_path(path).read_text())
    assert line["words"] == stored
    files = [audit.log_path(path), *path.parent.glob(path.name + "*")]
    assert leaked("".join(file.read_bytes().decode("latin-1") for file in files)) == []


def test_a_plain_prompt_costs_the_hook_no_regex_import(tmp_path, project):
    """Redaction runs on the hooks' per-turn path: a prompt with nothing shaped like a credential
    is stored without `re` being imported; one with a credential is stored redacted."""
    home = tmp_path / "home"
    script = (
        "import sys, io\n"  # not json: it imports re
        "sys.stdin = io.StringIO(sys.argv[2])\n"
        "sys.argv = ['memory-gate', 'hook', 'UserPromptSubmit']\n"
        "from gate.cli.entry import main\n"
        "main()\n"
        "print('re' in sys.modules, file=sys.stderr)\n"
    )
    loaded = {}
    # The pasted one first: creating the database imports re too (store applies schema.sql).
    for prompt_id, prompt in (("pasted", PASTED), ("plain", "why does the deploy fail on main?")):
        payload = json.dumps({"session_id": "s", "prompt_id": prompt_id, "prompt": prompt, "cwd": str(project)})
        result = subprocess.run([sys.executable, "-c", script, str(project), payload], capture_output=True,
                                text=True, env=child_env(home, CLAUDE_PROJECT_DIR=str(project)))
        loaded[prompt_id] = result.stderr.strip().splitlines()[-1] == "True"
    assert loaded == {"plain": False, "pasted": True}
    conn = store.connect(Path(config.database_for(home, project)))
    prompts = dict(conn.execute("SELECT prompt_id, prompt FROM turns"))
    assert prompts["plain"] == "why does the deploy fail on main?" and leaked(prompts["pasted"]) == []


@pytest.mark.parametrize(
    "ops, kept",
    [
        ([{"op": "insert", "topic": "deploy", "kind": ANTHROPIC, "text": "x"}], []),
        ([{"op": "insert", "topic": "deploy", "kind": "state", "text": "x", "date": AWS_SECRET}], []),
        ([{"op": GITHUB}], []),
        ([{"op": "insert", "topic": "deploy", "kind": "state", "text": "x", GITHUB: 1}], []),
        ([{"op": "update", "id": f"password={PASSWORD}", "text": "x"}], []),
        ([], [f"token {GITHUB}"]),
        ([GITHUB], []),
        ([{"op": "insert", "topic": f"deploy {AWS_ID}", "kind": "state", "text": f"key {GITHUB}"}], []),
    ],
)
def test_a_refusal_never_echoes_a_credential(conn, ops, kept):
    with pytest.raises(write.Refused) as refused:
        tools.memory_write(conn, ops, kept, tools.Caller("s"), log=None)
    message = str(refused.value)
    assert leaked(message) == [] and leaked(" ".join(refused.value.problems)) == []
    assert "[redacted: " in message or "looks like" in message


def test_a_hook_warning_never_echoes_a_credential(capsys):
    hookio.warn(f"memory-gate: UserPromptSubmit hook skipped (ValueError: bad {GITHUB}); memory is off")
    out, err = capsys.readouterr()
    assert leaked(out + err) == [] and "[redacted: GitHub token]" in err


@pytest.fixture
def old_memory(home):
    """A database and write.log from before redaction: a turn's prompt, a fact's text and a log
    line's words hold credentials as they were typed."""
    path = Path(config.find_database(config.load()))
    conn = store.connect(path)
    turn = ledger.open_turn(conn, "s-old", "p-old", "placeholder")
    conn.execute("UPDATE turns SET prompt = ? WHERE id = ?", (PASTED, turn.id))
    with store.writing(conn):
        changes = changeset.ChangeSet(conn, changeset.Author("s-old", "p-old", PASTED), audit.log_path(path))
        fact = changes.insert({"topic": "deploy", "kind": "state", "text": f"Deploy token {GITHUB}.", "date": "2026-11-30"})
        changes.finish(ledger.get_turn(conn, turn.id), digest="old", answer="")
    conn.execute("UPDATE facts SET confirmed = '2020-01-01T00:00:00Z'")  # for review
    assert GITHUB in audit.log_path(path).read_text()
    yield path, conn, fact
    conn.close()


def test_an_old_turn_and_an_old_fact_are_redacted_in_new_answers_and_log_lines(old_memory):
    path, conn, fact = old_memory
    caller = tools.Caller("s-old")
    found = tools.memory_search(conn, "deploy token", caller)
    assert leaked(found.text + json.dumps(found.structured())) == []
    assert "[redacted: GitHub token]" in found.structured()["facts"][0]["text"]
    tools.memory_write(conn, [{"op": "update", "id": fact, "text": "Deploy tokens are in the vault."}], [], caller,
                       log=audit.log_path(path))
    last = audit.log_path(path).read_text().splitlines()[-1]
    assert leaked(json.loads(last)["words"]) == []


@pytest.mark.parametrize(
    "argv",
    [["show"], ["show", "--json"], ["search", "deploy"], ["search", "--json", "deploy"], ["log"],
     ["log", "--json"], ["history", "1"], ["history", "1", "--json"], ["export"], ["review", "--days", "1"]],
)
def test_the_command_line_never_prints_a_credential_from_old_data(capsys, old_memory, argv):
    code = cli.main(argv)
    out, err = capsys.readouterr()
    assert code == 0 and leaked(out + err) == []
    assert "[redacted: " in out


@pytest.mark.parametrize(
    "line",
    [
        {"topic": "bot", "kind": GITHUB, "text": "The bot posts releases."},
        {"topic": "bot", "kind": "state", "text": "x", "updated": AWS_SECRET},
        {"topic": "bot", "kind": "state", "text": "x", f"token={GITHUB}": 1},
        [f"password={PASSWORD}"],
    ],
)
def test_an_import_refusal_never_echoes_a_credential(conn, line):
    from gate.memory import factlines, transfer
    from gate.memory.stores import LocalStore

    with pytest.raises(factlines.Refused) as refused:
        transfer.import_into(conn, io.StringIO(json.dumps(line) + "\n"), LocalStore(conn, None), command="memory-gate import x")
    assert leaked(str(refused.value)) == [] and "line 1" in str(refused.value)


def test_injected_context_stores_the_request_redacted(conn):
    from gate.context import state

    with store.writing(conn):
        state.claim(conn, "s", PASTED, source="hook", prompt_id="p1")
    stored = conn.execute("SELECT prompt FROM context_requests").fetchone()[0]
    assert leaked(stored) == [] and "[redacted: GitHub token]" in stored


def test_the_ledger_stores_any_caller_s_prompt_redacted(conn):
    """Not only the hook's: the command line's own turns (their words are the command typed) and
    a prompt delivered again go through open_turn too."""
    ledger.open_turn(conn, "s", "p1", None)
    ledger.open_turn(conn, "s", "p1", PASTED)  # the prompt arrives on a second delivery
    changeset.cli_turn(conn, f"memory-gate import --token {GITHUB} facts.jsonl")
    stored = [prompt for (prompt,) in conn.execute("SELECT prompt FROM turns ORDER BY id")]
    assert len(stored) == 2 and leaked(" ".join(stored)) == []
    assert stored[1] == "memory-gate import --token [redacted: GitHub token] facts.jsonl"
