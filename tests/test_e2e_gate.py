"""The gate on real Claude Code 2.1.332, headless and offline against the scripted fake API.

Each scenario runs with the plugin (mods/memory-gate: MCP server, settings hooks and the mod)
and, where it makes sense, with settings hooks only (what `memory-gate install` sets up), where
the Stop hook is the one that holds an answer. The model's steps are scripted; a step that must
react to a tool result (the ids a search returned) is a function of the request.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess  # the read-only checks below need no FTS functions
import sys
import threading
import time
from pathlib import Path

import pytest
from claude_harness import Sandbox, needs_claude
from fake_anthropic import Reply, last_tool_result_text, last_user_text, reply, text, tool_names, tool_results, tool_use

from gate import config
from gate.claude import hooks

pytestmark = needs_claude()

REPO = Path(__file__).resolve().parent.parent
PLUGIN = REPO / "mods" / "memory-gate"
PLUGIN_TOOLS = "mcp__plugin_memory-gate_memory__"
SETTINGS_TOOLS = "mcp__memory-gate__"
GATE_TOOL = "mcp__memory-gate__gate"
BIN = str(Path(sys.executable).parent)


def settings_only(prefix: str = SETTINGS_TOOLS) -> dict:
    """What a settings install gives Claude Code: the hooks and the memory tools allowed."""
    hook = lambda event: [{"hooks": [{"type": "command", "command": f"memory-gate hook {event} --tools {prefix}", "timeout": 10}]}]  # noqa: E731
    return {
        "hooks": {
            "UserPromptSubmit": hook("UserPromptSubmit"),
            "PreToolUse": [{"matcher": f"{prefix}memory_(search|write)", "hooks": hook("PreToolUse")[0]["hooks"]}],
            "SessionStart": [{"matcher": "compact|clear", "hooks": hook("SessionStart")[0]["hooks"]}],
            "Stop": hook("Stop"),
        },
        "permissions": {"allow": [f"{prefix}memory_search", f"{prefix}memory_write"]},
    }


MCP_CONFIG = {"mcpServers": {"memory-gate": {"command": "memory-gate", "args": ["serve"]}}}


class Gate:
    """A sandbox running Claude Code with memory-gate one way or the other."""

    def __init__(self, box: Sandbox, mode: str):
        self.box, self.mode = box, mode
        self.tools = PLUGIN_TOOLS if mode == "plugin" else SETTINGS_TOOLS

    def options(self) -> dict:
        if self.mode == "plugin":
            return {"plugin_dirs": [PLUGIN]}
        return {"settings": settings_only(), "mcp_config": MCP_CONFIG}

    def env(self, **extra) -> dict:
        return {"PATH": BIN + os.pathsep + os.environ.get("PATH", ""), **extra}

    def run(self, prompt: str, **kw):
        run = self.box.run(prompt, env=self.env(**kw.pop("env", {})), debug=True, **self.options(), **kw)
        assert run.load_errors() == [], run.load_errors()
        return run

    def session(self, **kw):
        return self.box.session(env=self.env(), debug=True, **self.options(), **kw)

    # -- the model's moves --

    def search(self, terms: str):
        return reply(tool_use(self.tools + "memory_search", {"terms": terms}))

    def write(self, ops=(), kept=()):
        return reply(tool_use(self.tools + "memory_write", {"ops": list(ops), "kept": list(kept)}))

    def keep_all(self, ops=()):
        """A step writing `ops` and keeping every id the last search said to answer for."""
        return lambda body: self.write(ops, must_answer(body))

    # -- what happened --

    def database(self) -> Path:
        return Path(config.database_for(self.box.home / ".claude", self.box.project))

    def turns(self) -> list[dict]:
        with sqlite3.connect(self.database()) as conn:
            conn.row_factory = sqlite3.Row
            return [dict(row) for row in conn.execute("SELECT * FROM turns ORDER BY id")]

    def tool_calls(self) -> list[dict]:
        with sqlite3.connect(self.database()) as conn:
            conn.row_factory = sqlite3.Row
            return [dict(row) for row in conn.execute("SELECT * FROM tool_calls ORDER BY at, tool")]

    def facts(self) -> list[tuple]:
        with sqlite3.connect(self.database()) as conn:
            return list(conn.execute("SELECT id, topic, text FROM facts ORDER BY id"))


def must_answer(body: dict) -> list[int]:
    """The ids the last memory_search result said to answer for (Claude Code shows the model the
    structured result as JSON)."""
    return json.loads(last_tool_result_text(body))["must_answer"]


def held_messages(run, gate: Gate) -> list[str]:
    """What each hold told the model: the mod's tool results, or the Stop hook's feedback."""
    if gate.mode == "plugin":
        return [
            text for body in run.requests for result in tool_results(body)
            if (text := _result_text(result)).startswith("memory-gate:")
        ]
    return [
        last_user_text(body).split("Stop hook feedback:\n", 1)[1].split("\n")[0]
        for body in run.requests if "Stop hook feedback:\n" in last_user_text(body)
    ]


def _result_text(result: dict) -> str:
    content = result.get("content")
    if isinstance(content, list):
        return "".join(block.get("text", "") for block in content)
    return content or ""


@pytest.fixture(params=["plugin", "settings"])
def gate(request, tmp_path):
    with Sandbox(tmp_path) as box:
        yield Gate(box, request.param)
        assert box.fake.errors == []


@pytest.fixture
def plugin_gate(tmp_path):
    with Sandbox(tmp_path) as box:
        yield Gate(box, "plugin")
        assert box.fake.errors == []


# -- 1. a compliant turn ---------------------------------------------------------------------


def test_a_compliant_turn_is_not_held(gate):
    gate.box.fake.add(
        gate.search("deploy"),
        gate.write([{"op": "insert", "topic": "deploy", "kind": "state", "text": "Deploys go through staging."}]),
        "Done: noted how deploys work.",
    )
    run = gate.run("Remember that deploys go through staging.")
    assert run.returncode == 0, run.explain()
    assert run.result_text == "Done: noted how deploys work."
    assert len(run.requests) == 3 and held_messages(run, gate) == []
    [turn] = gate.turns()
    assert turn["prompt"] == "Remember that deploys go through staging."
    assert (turn["searched"], turn["wrote"], turn["holds"], turn["outcome"]) == (1, 1, 0, "met")
    if gate.mode == "plugin":  # the write's own "nothing owed" let the answer out: no gate process
        assert "the server said nothing is owed" in run.debug_log()
        # Nor the gate tool: registering it slows the session, and it is registered at a first
        # answer that may owe memory.
        assert [gate_tools(body) for body in run.requests] == [[], [], []]
        # Of memory-gate's four hooks only UserPromptSubmit started Python: the mod handed the
        # server each call's turn and ruled the answer, and the launcher answered PreToolUse (twice)
        # and Stop from the marks it left (mods/memory-gate/bin/memory-gate).
        assert run.debug_log().count('Hooks: Parsed initial response: {"suppressOutput":true}') == 3
        assert "returned permissionDecision: allow (reason: memory-gate's own memory tool)" not in run.debug_log()
        assert list((gate.box.home / ".claude" / "plugins" / "data").glob("*/calls/*")) == []  # claimed
        # The mod's tool hooks run for memory's own tools only: Claude Code's other tools never
        # wait on the mods' worker (two tools described, the request's other tools untouched).
        assert run.debug_log().count("hooks module memory-gate@inline tool.describe settled") == 2
    assert [(call["turn"], call["tool"].rsplit("__", 1)[1], call["agent"]) for call in gate.tool_calls()] == [
        (turn["id"], "memory_search", None), (turn["id"], "memory_write", None)]
    assert gate.facts() == [(1, "deploy", "Deploys go through staging.")]


def gate_tools(body: dict) -> list[str]:
    """The mod's gate tool, if the request offers it to the model."""
    return [name for name in tool_names(body) if name.endswith("__gate") and "memory-gate" in name]


def partial_texts(line: str) -> list[str]:
    """The text a `--include-partial-messages` line carries as it streams, if any."""
    try:
        event = json.loads(line)
    except ValueError:
        return []
    delta = (event.get("event") or {}).get("delta") or {} if event.get("type") == "stream_event" else {}
    return [delta["text"]] if delta.get("type") == "text_delta" else []


def test_a_clear_turns_answer_streams_to_the_owner_as_the_model_writes_it(plugin_gate):
    gate = plugin_gate
    rest = threading.Event()
    answer = "Noted: deploys go through the staging branch first, then main."
    final = Reply([text(answer)], pause=rest)  # the model stops after its first words until the test says
    gate.box.fake.add(
        gate.search("deploy"),
        gate.write([{"op": "insert", "topic": "deploy", "kind": "state", "text": "Deploys go through staging."}]),
        final,
    )
    argv = gate.box.argv("Remember that deploys go through staging.", plugin_dirs=[PLUGIN],
                         args=["--include-partial-messages"], debug_file=gate.box.new_debug_file())
    proc = subprocess.Popen(argv, cwd=gate.box.project, env=gate.box.env(gate.env()), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        streamed, lines = "", []
        for line in proc.stdout:  # the first words reach the output while the rest is not yet written
            lines.append(line)
            streamed += "".join(partial_texts(line))
            if streamed:
                break
        assert streamed and answer.startswith(streamed), "".join(lines)[-3000:]
        assert not final.resumed.is_set()  # seen while the model was still writing
        rest.set()
        lines += proc.stdout.readlines()
        proc.wait(60)
    finally:
        rest.set()
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    result = [json.loads(line) for line in lines if '"type":"result"' in line.replace(" ", "")]
    assert result and result[-1]["result"] == answer
    [turn] = gate.turns()
    assert (turn["holds"], turn["outcome"]) == (0, "met")


def test_a_held_draft_never_streams(plugin_gate):
    gate = plugin_gate
    gate.box.fake.add("A draft that skipped memory.", gate.search("build"), gate.write(), "The real answer.")
    run = gate.run("Why does the build fail?", args=["--include-partial-messages"])
    assert run.result_text == "The real answer."
    assert "A draft that skipped memory" not in run.stdout
    assert "".join(text for line in run.stdout.splitlines() for text in partial_texts(line)) == "The real answer."


# -- 2, 3. an answer that owes memory is held ----------------------------------------------------


def test_an_answer_without_a_search_is_held_and_told_to_search(gate):
    gate.box.fake.add("A draft that skipped memory.", gate.search("build"), gate.write(), "The real answer.")
    run = gate.run("Why does the build fail?")
    assert run.returncode == 0, run.explain()
    [message] = held_messages(run, gate)
    assert "has not searched memory" in message and f"{gate.tools}memory_search" in message
    assert run.result_text == "The real answer."
    [turn] = gate.turns()
    assert (turn["holds"], turn["outcome"]) == (1, "met")
    if gate.mode == "plugin":  # registered at the held answer: offered from the next request on
        offered = [bool(gate_tools(body)) for body in run.requests]
        assert offered[0] is False and all(offered[1:]), offered


def test_a_search_without_a_write_is_held(gate):
    gate.box.fake.add(gate.search("build"), "An answer without writing.", gate.write(), "Answer after writing.")
    run = gate.run("Why does the build fail?")
    [message] = held_messages(run, gate)
    assert "has not written" in message and f"{gate.tools}memory_write" in message
    assert run.result_text == "Answer after writing."


# -- 4. every fact read must be answered for ---------------------------------------------------


def test_a_write_leaving_out_a_read_fact_is_refused_then_corrected(gate):
    gate.box.fake.add(
        gate.search("deploy"),
        gate.write([{"op": "insert", "topic": "deploy", "kind": "state", "text": "Deploys go through staging."}]),
        "Noted.",
    )
    gate.run("Deploys go through staging.")
    gate.box.fake.add(
        gate.search("deploy"),
        lambda body: gate.write([], []) if must_answer(body) == [1] else "search did not return fact 1",
        gate.write([], [1]),
        "Still true.",
    )
    run = gate.run("Do deploys still go through staging?")
    refusal = last_tool_result_text(run.requests[2])
    assert "fact 1 read this turn is not answered for" in refusal
    assert run.result_text == "Still true."
    assert held_messages(run, gate) == []
    assert gate.turns()[-1]["outcome"] == "met"


# -- 5. a model that never complies cannot wedge the turn -----------------------------------------


def test_a_model_that_never_complies_still_ends_the_turn(gate):
    gate.box.fake.add(*["I will not touch memory."] * 6)
    run = gate.run("Hello?")
    assert run.returncode == 0, run.explain()
    assert run.result_text == "I will not touch memory."
    holds = held_messages(run, gate)
    assert len(holds) == 3  # the gate's own count, in either mode (the Stop hook no longer blocks once)
    [turn] = gate.turns()
    assert (turn["holds"], turn["outcome"]) == (3, "released")
    assert told_owner(run).count("memory-gate: this answer went out without memory kept up to date.") == 1


def test_the_stop_hook_counts_its_blocks_across_tool_calls(gate):
    """Each search between two unwritten answers resets Claude Code's count of consecutive Stop
    blocks, and `stop_hook_active` says only that a block came before: the gate's own count ends
    the turn, with the answer and a line to the owner."""
    gate.box.fake.add(*[step for _ in range(6) for step in (gate.search("build"), "Not written.")])
    run = gate.run("Why does the build fail?")
    assert run.returncode == 0, run.explain()
    assert run.result_text == "Not written."
    assert len(held_messages(run, gate)) == 3
    assert (gate.turns()[0]["holds"], gate.turns()[0]["outcome"]) == (3, "released")
    assert told_owner(run).count("memory-gate: this answer went out without memory kept up to date.") == 1


def test_the_stop_hook_stays_within_a_block_cap_the_owner_lowered(tmp_path):
    """With CLAUDE_CODE_STOP_HOOK_BLOCK_CAP=2 Claude Code would override a third block and end the
    turn with an empty answer, unsaid: the gate lets the answer out itself, and says so."""
    with Sandbox(tmp_path) as box:
        gate = Gate(box, "settings")
        box.fake.add(*["I will not touch memory."] * 6)
        run = gate.run("Hello?", env={"CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": "2"})
        assert run.returncode == 0, run.explain()
        assert run.result_text == "I will not touch memory."
        assert len(held_messages(run, gate)) == 2
        assert (gate.turns()[0]["holds"], gate.turns()[0]["outcome"]) == (2, "released")
        assert told_owner(run).count("memory-gate: this answer went out without memory kept up to date.") == 1
        assert box.fake.errors == []


def told_owner(run) -> list[str]:
    """Lines shown to the owner: the mod's `$.ui.log` lines, after the plugin's name as Claude Code
    shows them, and the hooks' systemMessages. None names memory-gate twice."""
    notices = [e.get("content", "") for e in run.of_type("system", "informational")]
    lines = [f"memory-gate: {text}" for text in run.ui_logs("memory-gate")] + [n.split(" says: ", 1)[1] for n in notices if " says: " in n]
    assert not any("memory-gate: memory-gate:" in line for line in lines), lines
    return lines


# -- 6. a fact shown earlier comes back as its id only, in full again after /compact ---------------


def facts_shown(body: dict) -> list[dict]:
    return json.loads(last_tool_result_text(body))["facts"]


def test_a_fact_shown_earlier_is_an_id_only_until_compaction(gate):
    new = {"op": "insert", "topic": "deploy", "kind": "state", "text": "Deploys go through staging."}
    gate.box.fake.add(
        gate.search("deploy"), gate.write([new]), "Noted.",  # turn 1: the fact is written
        gate.search("deploy"), gate.keep_all(), "Still true.",  # turn 2: shown in full
        gate.search("deploy staging"), gate.keep_all(), "Yes.",  # turn 3: the id only
        gate.search("deploy"), gate.keep_all(), "After compaction.",  # turn 4: in full again
    )
    with gate.session() as session:
        session.send("Deploys go through staging.")
        second = session.send("How do deploys work?")
        third = session.send("Is that still so?")
        session.compact()
        fourth = session.send("And now?")
    assert facts_shown(second.requests[1]) == [{"id": 1, "kind": "state", "topic": "deploy",
                                               "date": facts_shown(second.requests[1])[0]["date"],
                                               "text": "Deploys go through staging."}]
    assert facts_shown(third.requests[1]) == [{"id": 1, "shown_before": True}]
    assert facts_shown(fourth.requests[1])[0]["text"] == "Deploys go through staging."
    assert [turn["outcome"] for turn in gate.turns()] == ["met"] * 4
    assert all(turn.result_text for turn in (second, third, fourth))


# -- 7. a resumed or continued session: each prompt is a turn of its own ---------------------------


@pytest.mark.parametrize("how", ["resume", "continue"])
def test_a_second_turn_answers_for_itself(gate, how):
    gate.box.fake.add(gate.search("deploy"), gate.write(), "First answer.")
    first = gate.run("First question.")
    gate.box.fake.add("An answer that skipped memory.", gate.search("deploy"), gate.write(), "Second answer.")
    option = {"resume": first.session_id} if how == "resume" else {"continue_": True}
    second = gate.run("Second question.", **option)
    assert second.returncode == 0, second.explain()
    assert len(held_messages(second, gate)) == 1 and second.result_text == "Second answer."
    turns = gate.turns()
    assert len(turns) == 2 and turns[0]["session"] == turns[1]["session"] == first.session_id
    assert [t["prompt"] for t in turns] == ["First question.", "Second question."]
    # The server of the second process may carry another session id (--continue): the hooks'
    # tool-call ids still put its search and write on the right turn.
    assert [(t["searched"], t["wrote"], t["outcome"]) for t in turns] == [(1, 1, "met"), (1, 1, "met")]


# -- 8. memory calls in a subagent count toward the parent's turn ----------------------------------


def test_a_subagent_searches_and_writes_for_the_turn(gate):
    task = {"description": "Record the deploy fact", "subagent_type": "general-purpose", "run_in_background": False,
            "prompt": "Search memory for deploy and record that deploys go through staging."}
    new = {"op": "insert", "topic": "deploy", "kind": "state", "text": "Deploys go through staging."}
    gate.box.fake.add(
        reply(tool_use("Agent", task)),  # the main loop starts a subagent
        gate.search("deploy"), gate.write([new]), "Recorded it.",  # the subagent's own steps
        "The subagent recorded it.",  # the main loop's answer
    )
    run = gate.run("Have a subagent record how deploys work.")
    assert run.returncode == 0, run.explain()
    assert run.result_text == "The subagent recorded it."
    assert held_messages(run, gate) == []
    [turn] = gate.turns()
    assert (turn["searched"], turn["wrote"], turn["outcome"]) == (1, 1, "met")
    # The subagent's calls are known as its own (the PreToolUse hook's record, or the mod's note).
    calls = gate.tool_calls()
    assert [call["tool"].rsplit("__", 1)[1] for call in calls] == ["memory_search", "memory_write"]
    assert all(call["turn"] == turn["id"] and call["agent"] for call in calls), calls
    assert gate.facts() == [(1, "deploy", "Deploys go through staging.")]


# -- 9. broken memory never locks the owner out ----------------------------------------------------


def test_a_corrupt_database_lets_the_turn_end_with_a_warning(gate):
    gate.database().parent.mkdir(parents=True)
    gate.database().write_bytes(b"this is not a database" * 100)
    gate.box.fake.add(gate.search("deploy"), "Answered anyway.")
    run = gate.run("Hello?")
    assert run.returncode == 0, run.explain()
    assert run.result_text == "Answered anyway."
    assert "the file is not a SQLite database" in last_tool_result_text(run.requests[1])
    assert "memory-gate:" in run.stdout + run.debug_log()  # the hooks' one-line warnings
    assert gate.database().read_bytes().startswith(b"this is not a database")  # untouched


def test_memory_gate_missing_from_path_lets_the_turn_end(gate):
    gate.box.fake.add("Answered without memory.")
    run = gate.run("Hello?", env={"PATH": "/usr/bin:/bin"})
    assert run.returncode == 0, run.explain()
    assert run.result_text == "Answered without memory."


# -- packaging: the marketplace at the repository root installs a working plugin --------------------


def test_the_plugin_and_marketplace_validate(tmp_path):
    with Sandbox(tmp_path) as box:
        result = subprocess.run([box.claude, "plugin", "validate", str(REPO)], env=box.env(), capture_output=True,
                                text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Validation passed" in result.stdout and "failed to load" not in result.stdout


def test_installed_from_the_marketplace_the_plugin_gates_turns(tmp_path):
    with Sandbox(tmp_path) as box:
        gate = Gate(box, "plugin")
        for argv in (["plugin", "marketplace", "add", str(REPO)], ["plugin", "install", "memory-gate@memory-gate"]):
            result = subprocess.run([box.claude, *argv], env=box.env(gate.env()), capture_output=True, text=True,
                                    cwd=box.project, timeout=60)
            assert result.returncode == 0, result.stdout + result.stderr
        box.fake.add("A draft.", gate.search("deploy"), gate.write(), "The answer.")
        run = box.run("Hello?", env=gate.env(), debug=True)  # no --plugin-dir: the installed plugin
        assert run.returncode == 0 and run.load_errors() == [], run.explain()
        assert run.result_text == "The answer."
        [message] = held_messages(run, gate)
        assert "has not searched memory" in message


# -- 10. a prompt the database cannot store as sent is still gated -------------------------------


def test_a_prompt_with_a_lone_surrogate_is_stored_sanitised_and_gated(gate):
    """stream-json input may carry `\\ud800`, which UTF-8 (and so SQLite) cannot hold."""
    gate.box.fake.add("A draft that skipped memory.", gate.search("build"), gate.write(), "The real answer.")
    with gate.session() as session:
        run = session.send("Why does the build fail? \ud800 it broke")
    assert run.result_text == "The real answer.", run.explain()
    [message] = held_messages(run, gate)
    assert "has not searched memory" in message
    [turn] = gate.turns()
    assert turn["prompt"] == "Why does the build fail? \ufffd it broke"
    assert (turn["searched"], turn["wrote"], turn["holds"], turn["outcome"]) == (1, 1, 1, "met")


# -- 11. a huge prompt does not push the contract out of what the model reads -----------------------


def test_a_huge_prompt_leaves_the_contract_first_in_the_search_result(gate):
    facts = [{"op": "insert", "topic": f"deploy {i}", "kind": "state", "text": f"Deploy rule {i}: " + "x" * 560}
             for i in range(8)]
    seen = {}

    def keep_after_reading(body):
        seen["result"] = last_tool_result_text(body)
        return gate.write([], json.loads(seen["result"])["must_answer"])

    gate.box.fake.add(gate.search("deploy"), gate.write(facts), "Noted.",
                      gate.search("deploy rule"), keep_after_reading, "Answered.")
    prompt = "Deploy rule question. " + "word " * 20_000  # 100k characters
    with gate.session() as session:
        session.send("Remember the deploy rules.")
        run = session.send(prompt)
    assert run.result_text == "Answered.", run.explain()
    result = seen["result"]
    preview = result[:2000]  # what Claude Code shows of a result it saves to a file
    assert '"must_answer":[1,2,3,4,5,6,7,8]' in preview.replace(" ", "") and "Answer for every id" in preview
    data = json.loads(result)
    assert data["owner_words"].startswith("Deploy rule question. word word")
    assert len(data["owner_words"]) < 1100 and "more characters" in data["owner_words"]
    assert [t["outcome"] for t in gate.turns()] == ["met", "met"]
    assert gate.turns()[1]["prompt"] == prompt  # the words themselves are all kept


# -- 12. --max-turns: a hold the limit cannot afford lets the answer out ---------------------------


def test_an_answer_at_the_max_turns_limit_goes_out_released(gate):
    gate.box.fake.add("The answer, without memory.", gate.search("x"), gate.write(), "A second answer.")
    run = gate.run("Hello?", args=["--max-turns", "1"])
    assert run.returncode == 0, run.explain()
    assert (run.result["subtype"], run.result_text) == ("success", "The answer, without memory.")
    [turn] = gate.turns()
    assert (turn["holds"], turn["outcome"]) == (0, "released")
    assert told_owner(run) == [
        "memory-gate: this answer went out without memory kept up to date: --max-turns 1 leaves no room to hold it."]


def test_a_hold_the_max_turns_limit_affords_still_happens(gate):
    gate.box.fake.add("A draft that skipped memory.", gate.search("build"), gate.write(), "The real answer.")
    run = gate.run("Why does the build fail?", args=["--max-turns", "4"])
    assert (run.result["subtype"], run.result_text) == ("success", "The real answer."), run.explain()
    assert len(held_messages(run, gate)) == 1
    assert [(t["holds"], t["outcome"]) for t in gate.turns()] == [(1, "met")]


# -- 13. a subagent is shown in full what only its parent had seen --------------------------------


def test_a_subagent_gets_the_text_of_a_fact_only_the_main_agent_saw(gate):
    new = {"op": "insert", "topic": "deploy", "kind": "state", "text": "Deploys go through staging."}
    task = {"description": "Check the deploy fact", "subagent_type": "general-purpose", "run_in_background": False,
            "prompt": "Search memory for deploy and keep what still holds."}
    seen = {}

    def subagent_keeps(body):
        seen["subagent"] = facts_shown(body)
        return gate.keep_all()(body)

    gate.box.fake.add(
        gate.search("deploy"), gate.write([new]), "Noted.",  # turn 1: the fact is written
        gate.search("deploy"), gate.keep_all(),  # turn 2: the main agent sees it in full
        reply(tool_use("Agent", task)),  # and starts a subagent
        gate.search("deploy"), subagent_keeps, "Kept it.",  # the subagent's own steps
        "The subagent kept it.",
    )
    with gate.session() as session:
        session.send("Deploys go through staging.")
        run = session.send("Have a subagent check the deploy fact.")
    assert run.result_text == "The subagent kept it.", run.explain()
    assert seen["subagent"] == [{"id": 1, "kind": "state", "topic": "deploy", "date": seen["subagent"][0]["date"],
                                 "text": "Deploys go through staging."}]
    assert [t["outcome"] for t in gate.turns()] == ["met", "met"]


# -- 14. an answer cut by max_tokens is held like a whole one --------------------------------------


def test_an_answer_cut_by_max_tokens_is_held_whole(gate):
    """Claude Code asks the model to go on from a cut answer. With the mod, the cut part is a final
    answer in the making and is held like a whole one (it used to stream out unheld); with settings
    hooks only, the Stop hook holds the answer once it ends, as for any answer."""
    cut = Reply([text("The first half of a long answer that skipped memory")], stop_reason="max_tokens")
    rest = [] if gate.mode == "plugin" else ["and its second half."]
    gate.box.fake.add(cut, *rest, gate.search("build"), gate.write(), "The whole answer, after memory.")
    run = gate.run("Why does the build fail?")
    assert run.returncode == 0 and run.result_text == "The whole answer, after memory.", run.explain()
    [message] = held_messages(run, gate)
    assert "has not searched memory" in message
    said = [block["text"] for block in run.assistant_blocks("text")]
    if gate.mode == "plugin":
        assert said == ["The whole answer, after memory."]  # the cut part reached no one
    assert [(t["holds"], t["outcome"]) for t in gate.turns()] == [(1, "met")]


# -- 15. the plugin and a settings install together: never a silent off ----------------------------


def test_the_plugin_beside_a_settings_install_says_so_and_still_holds(tmp_path):
    """The settings server `memory-gate` takes the name the mod's gate tool needs: the owner is
    told in one line, and the Stop hooks still hold an answer that owes memory."""
    with Sandbox(tmp_path) as box:
        gate = Gate(box, "settings")
        box.fake.add("A draft that skipped memory.", gate.search("build"), gate.write(), "The real answer.")
        run = box.run("Why does the build fail?", env=gate.env(), debug=True, plugin_dirs=[PLUGIN],
                      settings=settings_only(), mcp_config=MCP_CONFIG)
        assert run.returncode == 0 and run.load_errors() == [], run.explain()
        [line] = [text for text in run.ui_logs("memory-gate") if "could not register its gate tool" in text]
        assert "memory-gate uninstall" in line and "only the Stop hook holds answers now" in line
        assert run.result_text == "The real answer."
        assert held_messages(run, gate) and gate.turns()[0]["outcome"] == "met"
        assert box.fake.errors == []


def test_a_gate_tool_claude_code_refused_counts_no_hold(tmp_path):
    """The mod asks the gate at the first answer that owes memory and only then registers its
    tool; refused (an MCP server of the session owns the name), that hold never happened: the
    plugin's Stop hook still holds the answer three times before letting it out."""
    with Sandbox(tmp_path) as box:
        gate = Gate(box, "settings")  # held_messages: the Stop hook's feedback
        box.fake.add(*["I will not touch memory."] * 6)
        run = box.run("Hello?", env=gate.env(), debug=True, plugin_dirs=[PLUGIN], mcp_config=MCP_CONFIG)
        assert run.returncode == 0 and run.load_errors() == [], run.explain()
        assert any("could not register its gate tool" in text for text in run.ui_logs("memory-gate"))
        assert run.result_text == "I will not touch memory."
        assert len(held_messages(run, gate)) == 3
        [turn] = gate.turns()
        assert (turn["holds"], turn["outcome"]) == (3, "released")
        assert box.fake.errors == []


def test_a_stop_mark_an_earlier_process_left_is_cleared_by_the_next_ones_first_step(plugin_gate):
    """A mark says the mod ruled this turn's answer; one left by an earlier process of the session
    (an answer interrupted before its Stop hook ran) must not let a later turn's Stop hook pass
    unasked. The next process clears it at its first main-loop step, whatever that step does."""
    gate = plugin_gate
    gate.box.fake.add(gate.search("deploy"), gate.write(), "Nothing to note.")
    first = gate.run("Anything about deploys?")
    assert first.returncode == 0, first.explain()
    [mark_file] = (gate.box.home / ".claude" / "plugins" / "data").glob(f"*/done/Stop-{first.session_id}")
    mark_file.write_text("1")  # as if the Stop hook never came after the mod ruled
    gate.box.fake.add(reply(tool_use("Read", {"file_path": str(gate.box.project / "missing.txt")})))
    second = gate.run("Read missing.txt.", resume=first.session_id, args=["--max-turns", "1"])
    assert second.session_id == first.session_id, second.explain()
    assert mark_file.read_text() == ""


# -- 16. the host's record decides: an edited ledger releases nothing ------------------------------


def shell_sql(gate: Gate, sql: str):
    """A step running one SQL statement on the turn ledger through Claude Code's Bash tool, as a
    model with a shell could."""
    script = f"import sqlite3; c = sqlite3.connect({str(gate.database())!r}); c.execute({sql!r}); c.commit(); print('edited')"
    return reply(tool_use("Bash", {"command": f"{sys.executable} -c {json.dumps(script)}"}))


def test_a_ledger_edited_to_say_searched_and_written_releases_nothing(gate):
    """With the mod, the mod's own record rules; with settings hooks only, the Stop hook asks the
    memory server what it saw the turn do (gate.memory.witness). Neither reads the edited counts."""
    gate.box.fake.add(
        shell_sql(gate, "UPDATE turns SET searched = 1, wrote = 1"),
        "An answer that only edited the ledger.",
        gate.search("build"), gate.write(), "The real answer.",
    )
    run = gate.run("Why does the build fail?", args=["--allowedTools", "Bash"])
    assert run.returncode == 0, run.explain()
    assert "edited" in _result_text(run.tool_results()[0]), run.tool_results()[0]
    [message] = held_messages(run, gate)
    assert "has not searched memory" in message
    assert run.result_text == "The real answer."
    if gate.mode == "plugin":  # a Stop hook cannot take back a draft the owner has seen
        assert "An answer that only edited the ledger" not in run.stdout
    [turn] = gate.turns()
    assert (turn["holds"], turn["outcome"]) == (1, "met")
    assert not any("ledger file" in line for line in told_owner(run))


def test_a_fact_read_then_struck_from_the_ledger_is_still_owed(gate):
    """Deleting the turn's reads makes the server accept a write that leaves fact 1 out; the mod,
    or the server asked by the Stop hook, saw the search return it, and the answer is held until
    a write answers for it."""
    new = {"op": "insert", "topic": "deploy", "kind": "state", "text": "Deploys go through staging."}
    gate.box.fake.add(gate.search("deploy"), gate.write([new]), "Noted.")
    assert gate.run("Deploys go through staging.").result_text == "Noted."
    gate.box.fake.add(
        gate.search("deploy"),
        shell_sql(gate, "DELETE FROM reads"),
        gate.write([], []),
        "Answered without fact 1.",
        gate.search("deploy"),  # the server no longer knows fact 1 was read: read it again
        gate.keep_all(),
        "Still true.",
    )
    run = gate.run("Do deploys still go through staging?", args=["--allowedTools", "Bash"])
    assert run.returncode == 0, run.explain()
    accepted = json.loads(last_tool_result_text(run.requests[3]))
    assert accepted["kept"] == [] and "error" not in json.dumps(accepted).lower()
    [message] = held_messages(run, gate)
    assert "Fact 1 read this turn is not answered for" in message
    assert run.result_text == "Still true."
    assert gate.turns()[-1]["outcome"] == "met"


def delete_elsewhere(gate: Gate, fact: int) -> None:
    """Another session deletes the fact, through the tools, its change logged."""
    from gate.engine import store
    from gate.memory import audit
    from gate.serve import tools

    conn = store.connect(str(gate.database()))
    try:
        log = audit.log_path(gate.database())
        tools.memory_write(conn, [{"op": "delete", "id": fact}], [], tools.Caller("another-session"), log=log)
    finally:
        conn.close()


def test_a_fact_another_session_deleted_after_the_search_is_owed_no_more(gate):
    """The turn was shown fact 1, and another session deleted it before the turn's write: no write
    can answer for it (one naming it is refused). The write's answer says it is gone, and the
    mod's record, or the server's the Stop hook asks, owes it no more: the answer goes out met."""
    new = {"op": "insert", "topic": "deploy", "kind": "state", "text": "Deploys go through staging."}
    gate.box.fake.add(gate.search("deploy"), gate.write([new]), "Noted.")
    assert gate.run("Deploys go through staging.").result_text == "Noted."

    def write_after_the_delete(body):
        [fact] = must_answer(body)
        delete_elsewhere(gate, fact)
        return gate.write([], [])

    gate.box.fake.add(gate.search("deploy"), write_after_the_delete, *["Staging is gone from memory."] * 4)
    run = gate.run("Do deploys still go through staging?")
    assert run.returncode == 0, run.explain()
    accepted = json.loads(last_tool_result_text(run.requests[2]))
    assert accepted["gone"] == [1], accepted
    assert held_messages(run, gate) == []
    assert run.result_text == "Staging is gone from memory."
    [turn] = [turn for turn in gate.turns() if turn["prompt"] == "Do deploys still go through staging?"]
    assert (turn["holds"], turn["outcome"]) == (0, "met")
    assert gate.facts() == []


def test_with_no_server_to_ask_the_stop_hook_judges_on_the_ledger_and_says_so(tmp_path):
    """Settings hooks only, and no memory server answers (here none is configured): the Stop hook
    falls back to the ledger's counts, and the owner is told, in one line, that the gate judged
    the turn on a file a shell command can change."""
    with Sandbox(tmp_path) as box:
        gate = Gate(box, "settings")
        box.fake.add("A draft that skipped memory.", "The same answer, once more.")
        # One hold, then the answer goes out: the cap of Stop blocks the owner set.
        env = gate.env(CLAUDE_CODE_STOP_HOOK_BLOCK_CAP="1")
        run = box.run("Why does the build fail?", env=env, debug=True, settings=settings_only())
        assert run.returncode == 0, run.explain()
        [message] = held_messages(run, gate)
        assert "has not searched memory" in message
        assert run.result_text == "The same answer, once more."
        said = told_owner(run)
        # Said at the hold and at the release (the release's own line first), each time once.
        assert [line.count(hooks.LEDGER_ONLY) for line in said if "ledger" in line] == [1, 1], json.dumps(said, indent=1)
        assert said[-1].startswith(hooks.RELEASED), said
        assert box.fake.errors == []


# -- 17. Esc while an answer is held: the draft reaches no one ---------------------------------------


def test_esc_while_an_answer_is_held_leaks_no_draft(plugin_gate):
    """The owner interrupts (Esc; here the stream-json interrupt) while the model is still writing
    an answer the mod holds: none of the draft reaches the screen (the stream, with partial
    messages), and none reaches the model in the next turn's requests."""
    gate = plugin_gate
    go_on = threading.Event()
    draft = Reply([text("A draft that skipped memory, " * 8)], pause=go_on)
    gate.box.fake.add(draft, gate.search("build"), gate.write(), "The real answer.")
    with gate.session(args=["--include-partial-messages"]) as session:
        session.proc.stdin.write(json.dumps({"type": "user", "message": {"role": "user", "content": "Why does the build fail?"}}) + "\n")
        session.proc.stdin.flush()
        assert draft.reached.wait(60)
        # The mod has the draft's first words in hand (it says so in the debug log) before the Esc.
        wait_for(lambda: "holding the answer until it is whole" in session_debug(session))
        session.proc.stdin.write(json.dumps({"type": "control_request", "request_id": "esc", "request": {"subtype": "interrupt"}}) + "\n")
        session.proc.stdin.flush()
        interrupted = read_until_result(session)
        go_on.set()
        after = session.send("Go on, then.")
    assert "A draft that skipped memory" not in json.dumps(interrupted)
    assert after.result_text == "The real answer.", after.explain()
    assert not any("A draft that skipped memory" in json.dumps(body) for body in after.requests)
    assert "A draft that skipped memory" not in json.dumps(after.events)


def session_debug(session) -> str:
    return session.debug_file.read_text(errors="replace") if session.debug_file and session.debug_file.exists() else ""


def wait_for(condition, timeout: float = 30.0) -> None:
    """Wait until `condition()` holds (checked each 10 ms), failing after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.01)


def read_until_result(session) -> list[dict]:
    """The events of the interrupted turn, up to its result."""
    events = []
    while True:
        event = session._events.get(timeout=60)
        assert event is not None, "Claude Code ended"
        events.append(event)
        if event.get("type") == "result":
            return events
