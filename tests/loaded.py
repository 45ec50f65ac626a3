"""What a hook loads, told by where each module comes from: the tests of the hook path's imports
state that it imports nothing beyond the standard library, apsw and memory-gate's own modules,
whatever else the interpreter loads before it (site, a distribution's sitecustomize, an install's
.pth finders) and whatever one interpreter's standard library happens to hold."""

from __future__ import annotations

import importlib.util
import json
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

_SCRIPT = (
    "import sys\n"
    "before = set(sys.modules)\n"
    "import io, json\n"
    "sys.stdin = io.StringIO(sys.argv[2])\n"
    "sys.argv = ['memory-gate', *json.loads(sys.argv[1])]\n"
    "from gate.cli.entry import main\n"
    "main()\n"
    "spec = lambda module: getattr(module, '__spec__', None)\n"
    "origins = {name: getattr(spec(sys.modules[name]), 'origin', None) for name in set(sys.modules) - before}\n"
    "print(json.dumps(origins), file=sys.stderr)\n"
)


def loaded_by(args: list[str], payload: dict, env: dict) -> tuple[subprocess.CompletedProcess, dict[str, set[str]]]:
    """Run `memory-gate ARGS` in-process in a fresh interpreter, `payload` on its stdin; the modules
    it loaded that were not loaded before it ran, grouped by module_source()."""
    result = subprocess.run([sys.executable, "-c", _SCRIPT, json.dumps(args), json.dumps(payload)],
                            capture_output=True, text=True, env=env)
    origins = json.loads(result.stderr.strip().splitlines()[-1])
    by_source: dict[str, set[str]] = {}
    for name, origin in origins.items():
        by_source.setdefault(module_source(name, origin), set()).add(name)
    return result, by_source


def module_source(name: str, origin: str | None) -> str:
    """Where a module comes from: "stdlib" (built in, frozen, or a file in the standard library's
    own folders, their site-packages excepted), "apsw", "gate" (this checkout's), or else the
    file it was loaded from."""
    if origin in (None, "built-in", "frozen"):
        return "stdlib"
    path = Path(origin).resolve()
    top = name.partition(".")[0]
    if top == "apsw":
        spec = importlib.util.find_spec("apsw")
        folders = spec.submodule_search_locations or [str(Path(spec.origin).parent)]
        if any(path.is_relative_to(Path(folder).resolve()) for folder in folders):
            return "apsw"
    if top == "gate" and path.is_relative_to(REPO / "gate"):
        return "gate"
    paths = sysconfig.get_paths()
    installed = [paths["purelib"], paths["platlib"], *site.getsitepackages()]
    if any(path.is_relative_to(Path(folder).resolve()) for folder in installed):
        return str(path)
    if any(path.is_relative_to(Path(paths[key]).resolve()) for key in ("stdlib", "platstdlib")):
        return "stdlib"
    return str(path)
