"""--max-turns as the hooks see it: read from the Claude Code process above, and the model
requests a turn has made, counted from its transcript."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gate.claude import maxturns


@pytest.mark.parametrize("argv, expected", [
    (["claude", "-p", "hi", "--max-turns", "3"], 3),
    (["claude", "-p", "--max-turns=7", "hi"], 7),
    (["claude", "-p", "hi"], None),
    (["claude", "-p", "--max-turns"], None),
    (["claude", "-p", "--max-turns", "many"], None),
    (["claude", "-p", "--max-turns", "0"], None),
])
def test_parse(argv, expected):
    assert maxturns.parse(argv) == expected


@pytest.mark.skipif(not os.path.exists("/proc/self/cmdline"), reason="reads Linux /proc")
@pytest.mark.parametrize("flags, expected", [(["-p", "--max-turns", "5"], "5"), (["-p"], "None"), ([], "None")])
def test_the_limit_is_read_from_the_print_process_above_the_hooks_shell(flags, expected):
    # A stand-in for Claude Code (`python -c CODE -p --max-turns 5`) runs the hook through
    # `/bin/sh -c`, as Claude Code runs command hooks.
    hook = f"{sys.executable} -c 'from gate.claude import maxturns; print(maxturns.limit())'"
    parent = f"import subprocess; subprocess.run(['/bin/sh', '-c', {hook!r} + ' ; true'])"
    out = subprocess.run([sys.executable, "-c", parent, *flags], capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == expected, out.stderr


def entry(kind, prompt_id=None, message=None, **extra):
    line = {"type": kind, **extra}
    if prompt_id:
        line["promptId"] = prompt_id
    if message is not None:
        line["message"] = message
    return json.dumps(line)


def assistant(message_id, *blocks, **extra):
    return entry("assistant", message={"id": message_id, "role": "assistant", "content": list(blocks)}, **extra)


TOOL = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}


def transcript(tmp_path, *lines):
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_requests_are_counted_from_the_turns_prompt(tmp_path):
    path = transcript(
        tmp_path,
        entry("user", "p0", {"role": "user", "content": "an earlier turn"}),
        assistant("m0", {"type": "text", "text": "old"}),
        entry("user", "p1", {"role": "user", "content": "this turn"}),
        entry("attachment"),
        assistant("m1", TOOL),
        entry("user", "p1", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1"}]}),
        assistant("m2", {"type": "thinking", "thinking": "hm"}),
        assistant("m2", {"type": "text", "text": "the answer"}),  # one request in two entries
        assistant("s1", TOOL, isSidechain=True),  # a subagent's
    )
    assert maxturns.steps_in_transcript(path, "p1", "the answer") == 2
    # The transcript lags: the answer being stopped is not in it yet.
    assert maxturns.steps_in_transcript(path, "p1", "a later answer") == 3
    assert maxturns.steps_in_transcript(path, "p9", "no such turn") == 1
