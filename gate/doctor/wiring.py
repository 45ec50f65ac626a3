"""How memory-gate is wired into Claude Code, checked from the outside for `memory-gate doctor`.

Two ways in: the plugin (scripts/install, or `claude plugin install`), or the settings install
(`memory-gate install`: hooks in a settings file, the server in ~/.claude.json). Exactly one
should be on: with neither, memory is off; with both, every turn is gated twice. The checks ask
Claude Code itself where it can (`claude --version`, `claude plugin list --json`), read the
settings files install writes, resolve the command Claude Code will run as Claude Code would,
and start that server to see it list its tools.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

from gate import config
from gate.claude import entries, install, scopes, settingsfile
from gate.doctor.checks import NOTE, PROBLEM, WARNING, Finding

# The Claude Code the tests run against (package.json pins it); mods need 2.1.287 or later.
TESTED = "2.1.332"
MODS_SINCE = (2, 1, 287)
PLUGIN_ID = "memory-gate@memory-gate"
TOOLS = ["memory_search", "memory_write"]
MEND_VERSION = f"npm install -g @anthropic-ai/claude-code@{TESTED}"
GET_CLAUDE = f"{MEND_VERSION} (it installs and runs on Node 20 too, with an engine warning)"


def _version(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in text.split("."))
    except ValueError:
        return ()


def _ask(argv: list[str], cwd: str, timeout: float = 60) -> str | None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, timeout=timeout, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


# -- what Claude Code will run --------------------------------------------------------------


def plugin_command(folder: Path) -> tuple[str | None, str]:
    """The memory-gate the plugin in `folder` will run, found as its launcher finds it, and how."""
    try:
        server = json.loads((folder / ".mcp.json").read_text())["mcpServers"]["memory"]
    except (OSError, ValueError, KeyError, TypeError):
        return None, f"{folder / '.mcp.json'} has no memory server"
    command = str(server.get("command", "")).replace("${CLAUDE_PLUGIN_ROOT}", str(folder))
    if command != str(folder / "bin" / "memory-gate"):  # an older plugin: the name, from PATH
        found = shutil.which(command)
        return found, "on PATH" if found else f"`{command}` is not on PATH"
    recorded = folder / "bin" / "installed"
    if recorded.is_file():
        target = recorded.read_text().strip()
        if os.access(target, os.X_OK):
            return target, "recorded by scripts/install"
        on_path = _on_path(folder)
        return on_path, f"scripts/install recorded {target}, which is gone" + (", so PATH's" if on_path else "")
    on_path = _on_path(folder)
    return on_path, "on PATH (nothing recorded)" if on_path else "not recorded, not on PATH"


def _on_path(folder: Path) -> str | None:
    for part in os.environ.get("PATH", "").split(os.pathsep):
        candidate = Path(part) / "memory-gate"
        if part and os.access(candidate, os.X_OK) and candidate.resolve() != (folder / "bin" / "memory-gate").resolve():
            return str(candidate)
    return None


def lists_tools(command: str, cwd: str, timeout: float = 30) -> list[str]:
    """Start `command serve` as Claude Code does (stdio, MCP) and return the tools it lists;
    raises with what went wrong."""
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=command, args=["serve"], cwd=cwd, env=dict(os.environ))

    async def ask() -> list[str]:
        with anyio.fail_after(timeout):
            async with Client(params) as client:
                return [tool.name for tool in (await client.list_tools()).tools]

    with open(os.devnull, "w") as quiet, _stderr(quiet):
        return anyio.run(ask)


class _stderr:
    """The server's own start-up lines stay out of doctor's report."""

    def __init__(self, stream):
        self.stream = stream

    def __enter__(self):
        import sys

        self.saved, sys.stderr = sys.stderr, self.stream

    def __exit__(self, *exc):
        import sys

        sys.stderr = self.saved


# -- the settings install ----------------------------------------------------------------------


def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def settings_install(project: str) -> dict:
    """memory-gate's hooks (per event, how many) and server in the user's and this project's
    personal settings, as `memory-gate install` writes them."""
    try:
        root = scopes.project_root(project)
    except install.InstallError:
        root = Path(project)
    state = _read(Path(config.claude_state_file()))
    places = {
        "user": (Path(config.claude_dir()) / "settings.json", state.get("mcpServers")),
        "project": (
            root / ".claude" / "settings.local.json",
            (state.get("projects", {}).get(str(root)) or {}).get("mcpServers"),
        ),
    }
    found: dict[str, dict] = {}
    for scope, (settings_file, servers) in places.items():
        hooks = _read(settings_file).get("hooks")
        counts: dict[str, int] = {}
        for event, groups in hooks.items() if isinstance(hooks, dict) else []:
            for group in groups if isinstance(groups, list) else []:
                for hook in (group.get("hooks") or []) if isinstance(group, dict) else []:
                    if entries.is_our_hook(hook):
                        counts[event] = counts.get(event, 0) + 1
                        found.setdefault(scope, {}).setdefault("commands", set()).add(shlex.split(hook["command"])[0])
        server = servers.get(entries.SERVER) if isinstance(servers, dict) else None
        if counts or entries.is_our_server(server):
            entry = found.setdefault(scope, {})
            entry.update(
                file=str(settings_file),
                hooks=counts,
                server=server.get("command") if entries.is_our_server(server) else None,
            )
            entry["commands"] = sorted(entry.get("commands", []))
    return found


# -- the check ---------------------------------------------------------------------------------


def check(settings: config.Settings, claude: str | None = None) -> tuple[dict, list[Finding]]:
    """Claude Code's side: which claude, its version, the plugin, the settings install, wired
    once, and the server that will run."""
    found = shutil.which(claude or "claude")
    if found is None and claude is not None:  # named by the owner: not there is a problem, not a note
        return {"claude": None}, [
            Finding(
                f"--claude {claude} names no command that can be run (no such file, not executable, or no such command on PATH), "
                "so doctor did not check Claude Code",
                mend="Give the path of Claude Code's `claude` (`command -v claude` prints it), or leave --claude out",
            )
        ]
    if found is None:
        return {"claude": None}, [
            Finding(
                f"Claude Code (`{claude or 'claude'}`) is not on PATH, so doctor cannot say whether memory-gate is on in it",
                WARNING,
                f"Install it ({GET_CLAUDE}), then scripts/install; or point doctor at one: --claude PATH",
            )
        ]
    findings: list[Finding] = []
    cwd = settings.project_dir
    version = (_ask([found, "--version"], cwd, 30) or "").split(" ")[0].strip() or None
    report: dict = {"claude": found, "version": version, "tested": TESTED}
    if version is not None and () < _version(version) < MODS_SINCE:
        findings.append(
            Finding(
                f"Claude Code {version} cannot run memory-gate's mod (mods need 2.1.287 or later): the owner sees an "
                "unchecked answer first, then the Stop hook's correction. On Node 20, `npm install -g "
                "@anthropic-ai/claude-code` without a version installs 2.1.197",
                PROBLEM,
                f"Run: {MEND_VERSION}",
            )
        )
    elif version != TESTED:
        findings.append(
            Finding(
                f"Claude Code {version or '(unknown version)'} is not the version memory-gate's tests cover ({TESTED})",
                WARNING,
                f"The gate may well work; if it does not, {MEND_VERSION}",
            )
        )
    listed = _ask([found, "plugin", "list", "--json"], cwd)
    plugins = [entry for entry in json.loads(listed or "[]") if str(entry.get("id", "")).startswith("memory-gate@")]
    wired = settings_install(cwd)
    report["settings"] = {
        scope: {**entry, "commands": entry["commands"]} for scope, entry in wired.items()
    } or "not installed"
    commands: dict[str, str] = {}  # the command -> which way runs it

    plugin = next((entry for entry in plugins if entry.get("enabled")), plugins[0] if plugins else None)
    on = False
    if plugin is None:
        report["plugin"] = "not installed"
    else:
        folder = plugin.get("readFromFolder") or plugin.get("installPath")
        report["plugin"] = {"id": plugin.get("id"), "enabled": bool(plugin.get("enabled")), "folder": folder}
        if plugin.get("errors"):
            findings.append(
                Finding(
                    f"the plugin {plugin['id']} fails to load: {'; '.join(map(str, plugin['errors']))}",
                    mend="Its folder is gone or unreadable (a moved or deleted checkout?): run scripts/install from a checkout; it copies the plugins where moving the checkout cannot break them",
                )
            )
        elif not plugin.get("enabled"):
            findings.append(
                Finding(
                    f"the plugin {plugin['id']} is installed but disabled",
                    NOTE if wired else PROBLEM,
                    f"claude plugin enable {plugin['id']}"
                    + (" (and then `memory-gate uninstall`: one way only)" if wired else ""),
                )
            )
        else:
            on = True
            command, how = plugin_command(Path(folder))
            report["plugin"]["runs"] = {"command": command, "found": how}
            if command is None:
                findings.append(
                    Finding(
                        f"the plugin cannot find memory-gate: {how}; memory is off (the session says so at each prompt)",
                        mend="Run scripts/install from a checkout, or pip install memory-gate into a folder on PATH",
                    )
                )
            else:
                commands[command] = "plugin"
                if "recorded" not in how:
                    findings.append(
                        Finding(
                            f"the plugin finds memory-gate {how} ({command}): a Claude Code started where PATH lacks it has memory off",
                            WARNING,
                            "scripts/install records the command in the plugin, whatever PATH",
                        )
                    )
            if not (Path(folder) / "bin" / "installed").is_file():
                findings.append(
                    Finding(
                        f"the plugin is read in place from {folder}: moving or deleting that folder turns memory off",
                        WARNING,
                        "scripts/install copies the plugins to ~/.local/share/memory-gate/marketplace and installs from there",
                    )
                )
    for scope, entry in wired.items():
        where = f"the {scope} settings install ({entry['file']})"
        doubled = {event: count for event, count in entry["hooks"].items() if count > 1}
        if doubled:
            findings.append(
                Finding(
                    f"{where} runs memory-gate's hooks more than once: "
                    + ", ".join(f"{event} {count} times" for event, count in doubled.items()),
                    mend="Run `memory-gate install` again: it keeps one of each",
                )
            )
        missing = [event for event in entries.settings_hooks() if event not in entry["hooks"]]
        if missing or entry["server"] is None:
            findings.append(
                Finding(
                    f"{where} is incomplete: "
                    + ", ".join(
                        [f"no {event} hook" for event in missing]
                        + (["no MCP server"] if entry["server"] is None else [])
                    ),
                    mend="Run `memory-gate install" + (" --project DIR" if scope == "project" else "") + "` again",
                )
            )
        for command in [entry["server"], *entry["commands"]]:
            if command is None:
                continue
            resolved = (
                shutil.which(command)
                if os.path.basename(command) == command
                else (command if os.access(command, os.X_OK) else None)
            )
            if resolved is None:
                findings.append(
                    Finding(
                        f"{where} runs {command}, which is not there",
                        mend="Run `memory-gate install` from the memory-gate you use: it writes its own path",
                    )
                )
            elif command == entry["server"]:
                commands.setdefault(resolved, f"settings ({scope})")
    if on and wired:
        findings.append(
            Finding(
                "memory-gate is wired in twice, by the plugin and by "
                + " and ".join(f"the {scope} settings install" for scope in wired)
                + ": every turn is gated twice",
                mend=f"Keep one: `memory-gate uninstall` (and --project DIR) keeps the plugin; `claude plugin disable {PLUGIN_ID}` keeps the settings",
            )
        )
    if not on and not wired:
        findings.append(
            Finding(
                "Claude Code has no memory-gate: no plugin enabled, no settings install, so memory is off in every session",
                mend="Run scripts/install (the plugin), or `memory-gate install` (settings, no plugin)",
            )
        )
    report["auto_memory"], memory_findings = auto_memory(cwd, on or bool(wired), "plugin" if on else "settings")
    findings += memory_findings
    report["servers"] = {}
    for command, way in commands.items():
        try:
            tools = lists_tools(command, cwd)
        except Exception as error:  # anything the start-up does wrong is the finding
            report["servers"][command] = {"way": way, "error": f"{type(error).__name__}: {error}"}
            findings.append(
                Finding(
                    f"the MCP server {command} serve ({way}) does not start: {type(error).__name__}: {error}",
                    mend=f"Run `{command} serve` by hand to see why",
                )
            )
            continue
        report["servers"][command] = {"way": way, "tools": tools}
        if not set(TOOLS) <= set(tools):
            findings.append(
                Finding(
                    f"the MCP server {command} serve ({way}) lists {tools}, not {TOOLS}",
                    mend="Reinstall memory-gate (scripts/install, or pip install --upgrade)",
                )
            )
    return report, findings


def auto_memory(project: str, gated: bool, way: str) -> tuple[dict, list[Finding]]:
    """Claude Code's own auto memory for a session here: on or off and what decides it, and the
    files it left in the project's memory folder (gate.claude.automemory)."""
    from gate.claude import automemory

    try:
        root = scopes.project_root(project)
    except install.InstallError:
        root = Path(project)
    files = [
        Path(config.claude_dir()) / "settings.json",
        root / ".claude" / "settings.json",
        root / ".claude" / "settings.local.json",
    ]
    force = automemory.in_force(files)
    folder = Path(config.claude_dir()) / "projects" / config.project_key(root) / "memory"
    left = [path.name for path in automemory.files(folder)]
    report = {**force.to_json(), "files": left}
    findings = []
    if gated and force.on:
        findings.append(
            Finding(
                f"Claude Code's own auto memory is on ({force.by}): every session's system prompt tells the model of a "
                "second, file-based memory in the folder that holds memory.db, which it writes with the Write tool",
                WARNING,
                "Run `memory-gate install" + (" --plugin" if way == "plugin" else "") + "`: it sets autoMemoryEnabled "
                "false in your settings (`memory-gate uninstall` takes it out)",
            )
        )
    if left:
        findings.append(
            Finding(
                f"{len(left)} auto memory file(s) in {folder} ({', '.join(left[:5])}{' ...' if len(left) > 5 else ''}), which memory-gate does not search",
                NOTE,
                "Run `memory-gate import-auto-memory` to take them in as facts, each logged (the files stay)",
            )
        )
    return report, findings


def install_clash(project: str) -> list[str]:
    """The plugin and `memory-gate install` both on for this project: the mod then cannot hold
    answers (its gate tool's name is taken by the installed server)."""
    root = scopes.project_root(project) if project and Path(project).is_dir() else None
    enabled = scopes.plugin_enabled_in(scopes.plugin_settings(config.claude_dir(), root))
    if not enabled:
        return []
    try:
        state = settingsfile.Document.read(Path(config.claude_state_file())).data
    except settingsfile.FileError:
        return []
    servers = [state.get("mcpServers")]
    if root is not None and isinstance(state.get("projects"), dict):
        servers.append((state["projects"].get(str(root)) or {}).get("mcpServers"))
    if any(isinstance(found, dict) and entries.is_our_server(found.get(entries.SERVER)) for found in servers):
        return [install.clash(enabled) + "."]
    return []
