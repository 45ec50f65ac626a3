"""What the model reads of memory-gate's host, on real Claude Code 2.1.332, in both modes, as the
installs leave it: the plugin beside `memory-gate install --plugin` (what scripts/install runs), and
`memory-gate install` alone. One request each: the first request's system prompt and tools."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from claude_harness import Sandbox, needs_claude
from fake_anthropic import tool_names

from gate import config

pytestmark = needs_claude()

REPO = Path(__file__).resolve().parent.parent
PLUGIN = REPO / "mods" / "memory-gate"
BIN = Path(sys.executable).parent
AUTO_MEMORY = "persistent file-based memory"
DEFERRED = "The following deferred tools are now available via ToolSearch"


def first_request_text(body: dict) -> str:
    return json.dumps(body, ensure_ascii=False)


def deferred_list(body: dict) -> str:
    """The request's announcement of deferred tools (its lines up to the next blank line), or ""."""
    for message in body.get("messages", []):
        content = message.get("content")
        for block in content if isinstance(content, list) else [{"text": content}]:
            if isinstance(block, dict) and DEFERRED in str(block.get("text", "")):
                return block["text"].split(DEFERRED, 1)[1].split("\n\n", 1)[0]
    return ""


@pytest.mark.parametrize("mode", ["plugin", "settings"])
def test_the_model_is_told_of_one_memory_and_its_tools_are_in_front(tmp_path, mode):
    with Sandbox(tmp_path, ["Hello."]) as box:
        env = box.env({"PATH": os.pathsep.join([str(BIN), os.environ.get("PATH", "")])})
        install = ["install", "--plugin"] if mode == "plugin" else ["install"]
        done = subprocess.run([str(BIN / "memory-gate"), *install], cwd=box.project, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        run = box.run("hello", env={"PATH": env["PATH"]}, **({"plugin_dirs": [PLUGIN]} if mode == "plugin" else {}))
        assert run.returncode == 0, run.explain()
        [body, *_] = run.requests
        tools = "mcp__plugin_memory-gate_memory__" if mode == "plugin" else "mcp__memory-gate__"
        memory_tools = [tools + "memory_search", tools + "memory_write"]
        # One memory: Claude Code's own auto memory is not mentioned; the folder is memory-gate's (0700).
        assert AUTO_MEMORY not in first_request_text(body)
        folder = Path(config.database_for(box.home / ".claude", box.project)).parent
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700 and not list(folder.glob("*.md"))
        # True words: the memory tools' schemas are loaded, and they are never called deferred.
        assert set(memory_tools) <= set(tool_names(body))
        assert not any(name in deferred_list(body) for name in memory_tools), deferred_list(body)


def test_without_the_setting_claude_code_tells_of_its_own_memory(tmp_path):
    """The control: what the setting takes away is there by default on this build."""
    with Sandbox(tmp_path, ["Hello."]) as box:
        run = box.run("hello", plugin_dirs=[PLUGIN], env={"PATH": os.pathsep.join([str(BIN), os.environ.get("PATH", "")])})
        assert AUTO_MEMORY in first_request_text(run.requests[0])
