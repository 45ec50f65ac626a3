"""The harness drives the real Claude Code, offline, against the scripted fake API."""

import json
import sys
from pathlib import Path

import pytest

from claude_harness import (
    Sandbox,
    needs_claude,
    read_hook_log,
    recording_hooks,
    write_plugin,
)
from fake_anthropic import last_tool_result_text, reply, request_text, tool_use

pytestmark = needs_claude()

ECHO_SERVER = Path(__file__).parent / "claude_fixtures" / "echo_server.py"
ECHO_TOOL = "mcp__plugin_echo-plugin_echo__echo"


@pytest.fixture
def box(tmp_path):
    with Sandbox(tmp_path) as sandbox:
        yield sandbox
    assert sandbox.fake.errors == [], "Claude Code sent a request the real API would refuse"


def echo_plugin(root: Path, log: Path) -> Path:
    return write_plugin(root / "echo-plugin", "echo-plugin", mcp_servers={
        "echo": {"command": sys.executable, "args": [str(ECHO_SERVER)], "env": {"ECHO_LOG": str(log)}},
    })


def test_plain_text_answer_round_trip(box):
    box.fake.add("Hello from the fake.")

    run = box.run("say hi")

    assert run.returncode == 0, run.explain()
    assert run.result["subtype"] == "success" and run.result_text == "Hello from the fake."
    assert len(run.requests) == 1 and run.records[0].kind == "main"
    assert "say hi" in request_text(run.requests[0])
    assert run.session_id and run.session_id == run.records[0].headers.get("X-Claude-Code-Session-Id")


def test_plugin_mcp_tool_result_reaches_the_next_request(box, tmp_path):
    log = tmp_path / "echo.log"
    box.fake.add(
        reply("Let me echo.", tool_use(ECHO_TOOL, {"text": "ping"})),
        lambda body: "The tool said: " + last_tool_result_text(body),
    )

    run = box.run("echo ping", plugin_dirs=[echo_plugin(tmp_path, log)], allowed_tools=[ECHO_TOOL])

    assert run.returncode == 0, run.explain()
    assert last_tool_result_text(run.requests[1]) == "echo: ping"
    assert run.result_text == "The tool said: echo: ping"
    [call] = [json.loads(line) for line in log.read_text().splitlines()]
    assert call["meta"]["claudecode/toolUseId"] == run.assistant_blocks("tool_use")[0]["id"]
    assert call["env"]["CLAUDE_CODE_SESSION_ID"] == run.session_id


def test_settings_hook_fires_on_user_prompt_submit(box, tmp_path):
    log = tmp_path / "hooks.log"
    box.fake.add("ok")

    run = box.run("remember the staging branch", settings=recording_hooks(log, ["UserPromptSubmit"]))

    assert run.returncode == 0, run.explain()
    [hook] = read_hook_log(log)
    assert hook["hook_event_name"] == "UserPromptSubmit"
    assert hook["prompt"] == "remember the staging branch"
    assert hook["session_id"] == run.session_id and hook["prompt_id"]


def test_resume_continues_the_session_in_a_new_process(box):
    box.fake.add("first answer", "second answer")

    first = box.run("first prompt")
    second = box.run("second prompt", resume=first.session_id)

    assert second.returncode == 0, second.explain()
    assert second.session_id == first.session_id
    assert "first answer" in request_text(second.requests[0])


def test_one_process_takes_several_turns_and_compact(box, tmp_path):
    log = tmp_path / "hooks.log"
    box.fake.add("answer-alpha", "answer-beta", "answer-gamma")
    hooks = recording_hooks(log, ["UserPromptSubmit", "PreCompact", "SessionStart", "PostCompact"])

    with box.session(settings=hooks) as session:
        turns = [session.send("first"), session.send("second"), session.compact(), session.send("third")]

    assert [t.result_text for t in turns] == ["answer-alpha", "answer-beta", "", "answer-gamma"]
    assert [r.kind for r in turns[2].records] == ["compact"]
    after = request_text(turns[3].requests[0])
    assert "fake summary of the conversation" in after
    assert "answer-alpha" not in after and "answer-beta" in after  # the last exchange is kept verbatim
    events = [(h["hook_event_name"], h.get("source")) for h in read_hook_log(log)]
    assert events == [("SessionStart", "startup"), ("UserPromptSubmit", None), ("UserPromptSubmit", None),
                      ("PreCompact", None), ("SessionStart", "compact"), ("PostCompact", None),
                      ("UserPromptSubmit", None)]
    assert len({h["session_id"] for h in read_hook_log(log)}) == 1


SWAP_MOD = r"""
let TOOL = null;
const swapped = new Set();

export function register(on) {
  on("session.start", async ($, e, next) => {
    const r = await next(e);
    TOOL = (await $.tool.register({
      name: "nudge", description: "Says what is still missing.",
      inputSchema: { type: "object", properties: {} }, isDeferred: false,
    })).tool;
    $.ui.log("registered " + TOOL);
    return r;
  });

  on("tool.call", async ($, e, next) => (e.tool === TOOL ? { result: "NUDGE: search first" } : next(e)));

  on("turn.step", async function* ($, e, next) {
    const held = [];
    let stop = null;
    const stream = next(e);
    for await (const chunk of stream) {
      if (chunk.kind === "stop") stop = chunk;
      held.push(chunk);
    }
    const result = await stream.result;
    if (e.agentId === undefined && stop && stop.stopReason === "end_turn" && !swapped.has(e.turnId)) {
      swapped.add(e.turnId);
      yield { kind: "tool", index: 0, id: "toolu_nudge_" + e.index, name: TOOL };
      yield { kind: "input", index: 0, json: "{}" };
      yield { kind: "stop", stopReason: "tool_use", usage: stop.usage };
      return { ...result, answer: "", toolUses: [{ name: TOOL, input: {} }], stopReason: "tool_use" };
    }
    for (const chunk of held) yield chunk;
    return result;
  });
}
"""


def test_mod_swaps_the_final_answer_for_its_own_tool_call(box, tmp_path):
    mod = write_plugin(tmp_path / "swap-mod", "swap-mod", modules=["./register.js"],
                       files={"hooks/register.js": SWAP_MOD})
    box.fake.add("draft answer", lambda body: "final after " + last_tool_result_text(body))

    run = box.run("hello", plugin_dirs=[mod], debug=True)

    assert run.returncode == 0 and run.load_errors() == [], run.explain()
    assert run.ui_logs("swap-mod") == ["registered mcp__swap-mod__nudge"]
    assert "mcp__swap-mod__nudge" in [t["name"] for t in run.requests[0]["tools"]]
    assert last_tool_result_text(run.requests[1]) == "NUDGE: search first"
    assert run.result_text == "final after NUDGE: search first"
    assert "draft answer" not in run.stdout and "draft answer" not in request_text(run.requests[1])
