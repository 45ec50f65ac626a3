"""The words the mod (mods/memory-gate/hooks/register.js) and the Python side must agree on: the
server's "nothing owed" verdict the mod reads in memory_write's answer, the folders and the note
of the handoff (gate.serve.handoff), and the memory tools' names. JavaScript cannot import Python,
so each is read from register.js here and held equal to the constant the Python side uses: a
change to one side alone fails here, in a second, not in an end-to-end test with Claude Code."""

from __future__ import annotations

import json
import re

from conftest import REPO

from gate.serve import handoff, render

MOD = (REPO / "mods" / "memory-gate" / "hooks" / "register.js").read_text(encoding="utf-8")
LAUNCHER = (REPO / "mods" / "memory-gate" / "bin" / "memory-gate").read_text(encoding="utf-8")


def const(name: str) -> str:
    """The string a top-level `const NAME = "..."` of register.js holds."""
    found = re.search(rf'^const {name} = "([^"\\]*)";?$', MOD, re.MULTILINE)
    assert found, f"register.js has no const {name} holding a plain string"
    return found.group(1)


def test_the_mod_knows_the_servers_nothing_owed():
    assert const("CLEAR") == render.CLEAR


def test_the_mod_leaves_its_notes_and_marks_where_the_server_and_the_launcher_look():
    assert f"`${{data}}/{handoff.FOLDER}/${{e.tool_use_id}}.json`" in MOD
    assert f"`${{data}}/{handoff.MARKS}/${{hook}}-${{session}}`" in MOD
    assert f'mark="${{CLAUDE_PLUGIN_DATA:-}}/{handoff.MARKS}/$2-$CLAUDE_CODE_SESSION_ID"' in LAUNCHER


def test_a_note_the_mod_writes_is_one_the_server_reads_whole():
    body = re.search(r"const note = \{(.*?)\};", MOD, re.DOTALL)
    assert body, "register.js builds no `const note = {...}`"
    keys = re.findall(r"^\s*(\w+):", body.group(1), re.MULTILINE)
    tool = const("MEMORY_TOOLS") + "memory_write"
    values = {"session_id": "s1", "prompt_id": "p1", "tool_name": tool, "agent_id": "a1"}
    assert set(keys) == set(values)
    note = handoff.parse(json.dumps({key: values[key] for key in keys}).encode())
    assert note == handoff.Note("s1", "p1", tool, "a1")


def test_the_mods_memory_tools_are_the_ones_the_server_serves():
    names = re.findall(r'MEMORY_TOOLS \+ "(\w+)"', MOD)
    assert tuple(f"__{name}" for name in names) == handoff.TOOLS
