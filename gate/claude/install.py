"""Install memory-gate into Claude Code's settings files without the plugin, and take it out again.

What goes in (the same as the plugin gives Claude Code, proven end to end in tests):

- a settings file gets the four hooks of hooks/hooks.json (UserPromptSubmit, PreToolUse on the
  memory tools, SessionStart on compact|clear, Stop), each one short `memory-gate hook EVENT`
  line, and allow rules for the two memory tools;
- Claude Code's state file (~/.claude.json) gets the stdio MCP server `memory-gate`, which
  names the tools `mcp__memory-gate__memory_search` and `mcp__memory-gate__memory_write`.

Where, per scope (checked on Claude Code 2.1.328, see the commit that added this module):

- user: `~/.claude/settings.json`, and `mcpServers` at the top of ~/.claude.json (where
  `claude mcp add --scope user` puts a server);
- project: `<root>/.claude/settings.local.json` (personal: allow rules in the shared
  `.claude/settings.json` are dropped while the folder is untrusted, and a team's file is not
  ours to change), and `projects[<root>].mcpServers` in ~/.claude.json (the local scope of
  `claude mcp add`: no `.mcp.json` to commit, no approval prompt). `<root>` is the project's git
  root, as Claude Code keys it, else the folder itself.

The invariant: install makes memory-gate's entries in those files exactly the current set, and
changes nothing else (every other key, in its order); uninstall takes memory-gate's entries out,
and the lists, objects, files and folders install created once they are empty. memory-gate's
entries are recognised by what they run (`memory-gate hook ...`, `memory-gate serve`, the two
rule strings), whatever path the command has (gate.claude.entries makes and recognises them).
What install added (entries, lists, objects, files, folders) is kept in a small record in
memory-gate's home, since the files cannot say it: an entry that was there before install stays
through uninstall.

The merge functions are pure (old JSON in; new JSON and the list of changes out); around them,
thin file code reads, refuses what is not a JSON object, backs up and writes atomically.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from gate.claude import automemory
from gate.claude.entries import RULES, SERVER, hook_groups, is_our_hook, is_our_server, server_entry
from gate.claude.scopes import (
    PLUGIN,
    InstallError,
    Scope,
    plugin_enabled_in,
    read_record,
    write_record,
)
from gate.claude.settingsfile import (
    MISSING,
    Document,
    FileChange,
    FileError,
    Path_,
    dotted,
    get,
    pointer,
    put,
    save,
    unpointer,
)

RECORD_NAME = "memory-gate-install.json"


# -- pure merges ------------------------------------------------------------------------------

# In a recorded path, the last key HOOK stands for memory-gate's group in that event's hook list.
HOOK = "memory-gate hook"


@dataclass
class Edit:
    """A document after a merge: its new content (None: delete the file), one line per change
    (`+` added, `~` updated, `-` removed), notes for the user, and (install) the paths of what it
    added: containers, hook groups, rules, the server; `()` for the file itself."""

    data: dict | None
    changes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    added: list[Path_] = field(default_factory=list)


def _strip_hooks(groups: list) -> tuple[list, int | None]:
    """The groups without memory-gate's hooks (a group left with no hook goes too), and the
    index where the first group that held one sat."""
    kept, first = [], None
    for group in groups:
        inner = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(inner, list) or not any(is_our_hook(hook) for hook in inner):
            kept.append(group)
            continue
        if first is None:
            first = len(kept)
        rest = [hook for hook in inner if not is_our_hook(hook)]
        if rest:
            kept.append({**group, "hooks": rest})
    return kept, first


def add_to_settings(data: dict, exe: str, *, plugin: bool = False) -> Edit:
    """Settings with memory-gate's hooks and allow rules in, exactly once each, and Claude Code's
    auto memory off (gate.claude.automemory). A memory-gate hook already there (another path, a
    hand-written line) is replaced where it sits; it counts as there before install, not as added.
    `plugin`: the plugin brings hooks, server and rules; only what a plugin cannot set goes in."""
    edit = Edit(data) if plugin else _add_hooks_and_rules(data, exe)
    assert edit.data is not None, "an install leaves settings to write"
    edit.data, changes, added = automemory.turn_off(edit.data)
    edit.changes += changes
    edit.added += added
    return edit


def _add_hooks_and_rules(data: dict, exe: str) -> Edit:
    edit = Edit(data)
    assert edit.data is not None
    wanted = hook_groups(exe)
    hooks = get(data, ("hooks",), dict)
    if hooks is MISSING:
        edit.added.append(("hooks",))
        hooks = {}
    for event in [*hooks, *(event for event in wanted if event not in hooks)]:
        old = hooks.get(event, MISSING)
        if event not in wanted and not isinstance(old, list):
            continue  # not memory-gate's event, and not a list of hooks: not ours to judge
        groups = [] if old is MISSING else get(data, ("hooks", event), list)
        kept, first = _strip_hooks(groups)
        if event in wanted:
            at = len(kept) if first is None else first
            new = kept[:at] + [wanted[event]] + kept[at:]
        elif first is None:
            continue
        else:  # an event an earlier memory-gate hooked and this one does not
            new = kept or MISSING
        if new == old:
            continue
        edit.added += [("hooks", event)] if old is MISSING else []
        edit.added += [("hooks", event, HOOK)] if event in wanted and first is None else []
        sign = "-" if event not in wanted else "~" if first is not None else "+"
        edit.changes.append(f"{sign} hook {event}" + (" (memory-gate no longer uses it)" if sign == "-" else ""))
        edit.data = put(edit.data, ("hooks", event), new)
    allow = get(data, ("permissions", "allow"), list)
    if allow is MISSING:
        if get(data, ("permissions",), dict) is MISSING:
            edit.added.append(("permissions",))
        edit.added.append(("permissions", "allow"))
        allow = []
    missing = [rule for rule in RULES if rule not in allow]
    if missing:
        edit.data = put(edit.data, ("permissions", "allow"), allow + missing)
        edit.changes += [f"+ allow {rule}" for rule in missing]
        edit.added += [("permissions", "allow", rule) for rule in missing]
    plugins = data.get("enabledPlugins")
    if isinstance(plugins, dict) and any(key.startswith(f"{SERVER}@") and on for key, on in plugins.items()):
        edit.notes.append(
            "the memory-gate plugin is enabled in this file too: beside this install its mod cannot hold answers. "
            "Use one way: disable the plugin, or run `memory-gate uninstall`."
        )
    return edit


def _mine(path: Path_, added: set[Path_] | None) -> bool:
    """Whether uninstall takes out what is at path: install added it, or, with no record of what
    install added, it is memory-gate's."""
    return added is None or path in added


def _prune(edit: Edit, path: Path_, before: Any, added: set[Path_] | None) -> None:
    """Remove the container at path when it is now empty and install added it; with no record of
    that, when this uninstall emptied it."""
    assert edit.data is not None, "pruned before the file is deleted"
    now = get(edit.data, path, type(before))
    if now is MISSING or now:
        return
    if (path in added) if added is not None else bool(before):
        edit.data = put(edit.data, path, MISSING)


def _prune_file(edit: Edit, before: dict, added: set[Path_] | None) -> Edit:
    if edit.data == {} and ((() in added) if added is not None else bool(before)):
        edit.data = None
        edit.changes.append("- the file (nothing else was in it)")
    return edit


def _left(edit: Edit, what: list[str]) -> None:
    if what:
        edit.notes.append(
            f"left {', '.join(what)}: {'it was' if len(what) == 1 else 'they were'} there before install. "
            "Run uninstall again to take out every memory-gate entry."
        )


def remove_from_settings(data: dict, added: set[Path_] | None) -> Edit:
    """Settings without the hooks and allow rules install added (`added`: its record; None when
    there is none, and then without every memory-gate hook and rule)."""
    edit, left = Edit(data), []
    edit.data, edit.changes, edit.notes = automemory.turn_back(data, added)
    data = edit.data
    hooks = get(data, ("hooks",), dict)
    for event, groups in ({} if hooks is MISSING else hooks).items():
        if not isinstance(groups, list) or _strip_hooks(groups)[1] is None:
            continue
        if not _mine(("hooks", event, HOOK), added):
            left.append(f"hook {event}")
            continue
        edit.data = put(edit.data, ("hooks", event), _strip_hooks(groups)[0])
        edit.changes.append(f"- hook {event}")
        _prune(edit, ("hooks", event), groups, added)
    if hooks is not MISSING:
        _prune(edit, ("hooks",), hooks, added)
    allow = get(data, ("permissions", "allow"), list)
    ours = [] if allow is MISSING else [rule for rule in RULES if rule in allow]
    gone = [rule for rule in ours if _mine(("permissions", "allow", rule), added)]
    left += [f"allow {rule}" for rule in ours if rule not in gone]
    if gone:
        edit.data = put(edit.data, ("permissions", "allow"), [rule for rule in allow if rule not in gone])
        edit.changes += [f"- allow {rule}" for rule in gone]
        _prune(edit, ("permissions", "allow"), allow, added)
        _prune(edit, ("permissions",), data["permissions"], added)
    _left(edit, left)
    return _prune_file(edit, data, added)


def add_server(data: dict, exe: str, at: Path_ = ()) -> Edit:
    """Claude Code's state with the memory-gate MCP server in `<at>.mcpServers`; nothing else is
    touched. An entry of that name that runs something else is refused, never overwritten."""
    edit = Edit(data)
    place = at + ("mcpServers",)
    edit.added += [place[:depth] for depth in range(1, len(place) + 1) if get(data, place[:depth], dict) is MISSING]
    servers = get(data, place, dict)
    existing = MISSING if servers is MISSING else servers.get(SERVER, MISSING)
    if existing is MISSING:
        entry = server_entry(exe)
        edit.changes.append(f"+ MCP server {SERVER}: {exe} serve")
        edit.added.append(place + (SERVER,))
    elif is_our_server(existing):
        entry = {**existing, "command": exe, "args": ["serve"], "alwaysLoad": True}  # keeps the user's env
        if entry == existing:
            return edit
        was = " ".join(map(str, [existing["command"], *existing["args"]]))
        edit.changes.append(f"~ MCP server {SERVER}: {exe} serve (was {was})")
    else:
        raise InstallError(
            f"{dotted(place + (SERVER,))} is there already and does not run `memory-gate serve`: "
            "rename or remove that server (`claude mcp remove memory-gate`), then install again"
        )
    edit.data = put(data, place + (SERVER,), entry)
    return edit


def remove_server(data: dict, at: Path_, added: set[Path_] | None) -> Edit:
    """Claude Code's state without the memory-gate server install added, and the containers it
    added for it."""
    edit = Edit(data)
    place = at + ("mcpServers",)
    servers = get(data, place, dict)
    existing = MISSING if servers is MISSING else servers.get(SERVER, MISSING)
    if existing is MISSING:
        return edit
    if not is_our_server(existing):
        edit.notes.append(f"left {dotted(place + (SERVER,))} alone: it does not run `memory-gate serve`")
        return edit
    if not _mine(place + (SERVER,), added):
        _left(edit, [f"MCP server {SERVER}"])
        return edit
    edit.data = put(data, place + (SERVER,), MISSING)
    edit.changes.append(f"- MCP server {SERVER}")
    for depth in range(len(place), 0, -1):
        _prune(edit, place[:depth], get(data, place[:depth], dict), added)
    return _prune_file(edit, data, added)


def clash(where: list[Path]) -> str:
    """Why the plugin and this install cannot both be on, and the mend."""
    return (
        f"the memory-gate plugin is enabled in {' and '.join(str(path) for path in where)}, and it brings "
        f"everything install adds (hooks, memory server, and the mod that holds answers). With both, "
        f"this install's MCP server `{SERVER}` takes the name the mod's gate tool needs, and the mod "
        "cannot hold answers. Use one: keep the plugin and run `memory-gate uninstall`, or "
        f"`claude plugin uninstall {PLUGIN}@<marketplace>` first"
    )


# -- install and uninstall --------------------------------------------------------------------


@dataclass
class Report:
    verb: str  # install | uninstall
    scope: Scope
    files: list[FileChange]
    notes: list[str]
    dry_run: bool

    @property
    def changed(self) -> bool:
        return any(change.action != "unchanged" for change in self.files)

    def lines(self) -> list[str]:
        notes = [f"note: {note}" for note in self.notes]
        names = " and ".join(str(change.path) for change in self.files)
        if not self.changed and self.verb == "install":
            return [f"memory-gate is already installed for {self.scope.label}: {names} need no change", *notes]
        if not self.changed:
            return [f"memory-gate is not installed for {self.scope.label}: nothing to take out of {names}", *notes]
        out = [
            f"memory-gate {self.verb} for {self.scope.label}" + ("; dry run, nothing written" if self.dry_run else "")
        ]
        for change in self.files:
            if change.action == "unchanged":
                out.append(f"  up to date {change.path}")
                continue
            verb = change.action if not self.dry_run else "would " + change.action.removesuffix("d")
            out.append(f"  {verb} {change.path}")
            out += [f"    {line}" for line in change.changes]
            if change.backup is not None:
                out.append(f"    backup of the previous file: {change.backup}")
            if change.restored is not None:
                out.append(f"    back byte for byte as before install (from {change.restored}, now removed)")
        if not self.dry_run:
            out.append(
                "Claude Code sessions started from now on "
                + ("have memory-gate." if self.verb == "install" else "run without memory-gate.")
            )
        return out + notes


def _merge(doc: Document, merge, *args) -> Edit:
    try:
        return merge(doc.data, *args)
    except (InstallError, FileError) as error:
        raise InstallError(f"{doc.path}: {error}. Nothing was changed.") from None


def install(
    scope: Scope,
    exe: str,
    *,
    record: Path,
    dry_run: bool = False,
    plugin_in: list[Path] | None = None,
    plugin: bool = False,
) -> Report:
    """Put memory-gate's hooks, allow rules and server into the scope's files, and turn Claude
    Code's auto memory off. Both files are read and checked before either is written. Refused
    while the plugin is enabled in any of `plugin_in` (settings files): the two together would
    leave the mod unable to hold answers. `plugin` (beside the plugin, by scripts/install): only
    what a plugin cannot bring, the auto memory setting, goes in."""
    enabled = [] if plugin else plugin_enabled_in(plugin_in or [])
    if enabled:
        raise InstallError(clash(enabled) + ". Nothing was changed.")
    settings = Document.read(scope.settings)
    edits = [(settings, _merge(settings, partial(add_to_settings, plugin=plugin), exe))]
    if not plugin:
        state = Document.read(scope.state)
        edits.append((state, _merge(state, add_server, exe, scope.server_at)))
    files, notes, added = [], [], read_record(record)
    for doc, edit in edits:
        change, made = save(doc, edit.data, edit.changes, dry_run=dry_run)
        files.append(change)
        notes += edit.notes
        if change.action != "unchanged":
            entry = added.setdefault(str(doc.path), {"added": [], "dirs": []})
            new = ([""] if change.action == "created" else []) + [pointer(path) for path in edit.added]
            entry["added"] += [path for path in new if path not in entry["added"]]
            entry["dirs"] += [folder for folder in made if folder not in entry["dirs"]]
    if not dry_run and any(change.action != "unchanged" for change in files):
        write_record(record, added)
    if scope.root is not None and not dry_run:
        exposed = git_unignored(scope.root, [path for path in (settings.path, settings.backup) if path.exists()])
        if exposed:
            names = " and ".join(str(path.relative_to(scope.root)) for path in exposed)
            notes.append(
                f"git does not ignore {names}: add `.claude/*.local.json*` to .gitignore to keep your own settings out of commits"
            )
    if os.path.basename(exe) == exe and not plugin:
        notes.append(f"hooks and server run `{exe}` from PATH: Claude Code must be started where it is on PATH")
    return Report("install", scope, files, notes, dry_run)


def uninstall(scope: Scope, *, record: Path, dry_run: bool = False) -> Report:
    """Take out of the scope's files what install added (every memory-gate entry when there is no
    record of that), and the files and folders it created once they are empty."""
    settings, state = Document.read(scope.settings), Document.read(scope.state)
    added = read_record(record)

    def recorded(doc: Document) -> set[Path_] | None:
        entry = added.get(str(doc.path))
        return (
            None
            if not isinstance(entry, dict)
            else {unpointer(text) for text in entry.get("added", []) if isinstance(text, str)}
        )

    edits = [
        (settings, _merge(settings, remove_from_settings, recorded(settings))),
        (state, _merge(state, remove_server, scope.server_at, recorded(state))),
    ]
    files, notes, folders = [], [], []
    for doc, edit in edits:
        change, _ = save(doc, edit.data, edit.changes, dry_run=dry_run, undo=True)
        files.append(change)
        notes += edit.notes
        entry = None if dry_run else added.pop(str(doc.path), None)
        if isinstance(entry, dict) and change.action == "deleted":
            folders += entry.get("dirs", [])
    if not dry_run:
        write_record(record, added)
    for folder in folders:  # deepest first
        try:
            os.rmdir(folder)
        except OSError:
            break  # not empty: something else lives there now
    return Report("uninstall", scope, files, notes, dry_run)


def git_unignored(root: Path, paths: list[Path]) -> list[Path]:
    """The paths in the git repo at root that git does not ignore (none when there is no repo or
    no git): a personal file there could be committed by accident."""
    if not paths or not (root / ".git").exists() or shutil.which("git") is None:
        return []
    relative = [str(path.relative_to(root)) for path in paths]
    result = subprocess.run(["git", "-C", str(root), "check-ignore", "--", *relative], capture_output=True, text=True)
    ignored = set(result.stdout.splitlines()) if result.returncode in (0, 1) else set(relative)
    return [path for path, name in zip(paths, relative) if name not in ignored]
