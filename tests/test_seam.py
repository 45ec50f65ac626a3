"""Outside the engine, no code asks which engine it runs on (gate.engine.seam).

A module outside gate/engine/ takes a store (gate.engine.seam.Store: its facts, record, lists,
index) and calls it; the engine's SQL and connections answer. What this test counts as asking
which engine it runs on, read from each module's syntax tree:

- a test (if, a conditional expression, while, assert, and/or, a comprehension's if, `not`) of
  a name or attribute called `team`, `is_team` or `local` (TeamFacts or None, a
  `local` flag): `if opened.team is None`, `x if team else y`;
- any comparison of one of those with None (`shared = memory.team is not None`);
- `isinstance` with an engine's class (a name holding Team, Postgres, Sqlite or LocalFacts).

Not counted: asking a capability of the store where what a person is told differs on a team
(`store.shared`, `store.record.where`, `store.index.embeds_waiting`), or where the algorithm
genuinely differs for a reason the store names: `store.commits_apart`, facts that commit in a
transaction of their own apart from the turn ledger's (another database), so that memory_write
goes in phases, the ledger's lock never held while they answer (gate.memory.write), where facts
in the ledger's own file are written in one transaction. And not the team member's own
identity and connection (`member`, gate.memory.team), which the team's commands, the server and
the page name to the person. The opener (gate.memory.opening) is the one place that picks the
engine, so it may branch.

ALLOWED names the modules that still branch, each with why; the test fails for a branch point
in any other module, and for a module listed here that no longer branches (take it off the list).
"""

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GATE = REPO / "gate"

ENGINE_NAMES = {"team", "is_team", "local"}
ENGINE_CLASSES = ("Team", "Postgres", "Sqlite", "LocalFacts")

# The opener: where the project's store is chosen, local or a team's.
OPENER = {"gate/memory/opening.py"}

# None now: import's team path went behind the seam (Store.import_rows, gate.memory.teamimport).
ALLOWED: dict[str, str] = {}


def _named(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _asks(test: ast.AST) -> bool:
    """Whether a tested expression is an engine's name, or compares one."""
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    if isinstance(test, ast.Compare):
        return any(_named(side) in ENGINE_NAMES for side in [test.left, *test.comparators])
    return _named(test) in ENGINE_NAMES


def _none_compare(node: ast.Compare) -> bool:
    sides = [node.left, *node.comparators]
    nothing = any(isinstance(side, ast.Constant) and side.value is None for side in sides)
    return nothing and any(_named(side) in ENGINE_NAMES for side in sides)


def _engine_class(node: ast.AST) -> bool:
    classes = node.elts if isinstance(node, ast.Tuple) else [node]
    return any(any(word in (_named(each) or "") for word in ENGINE_CLASSES) for each in classes)


def branch_points(tree: ast.AST) -> list[int]:
    """The lines where the module asks which engine it runs on."""
    found = []
    for node in ast.walk(tree):
        tests: list[ast.AST] = []
        if isinstance(node, (ast.If, ast.IfExp, ast.While, ast.Assert)):
            tests = [node.test]
        elif isinstance(node, ast.BoolOp):
            tests = list(node.values)
        elif isinstance(node, ast.comprehension):
            tests = list(node.ifs)
        elif isinstance(node, ast.Compare) and _none_compare(node):
            found.append(node.lineno)
        elif (
            isinstance(node, ast.Call)
            and _named(node.func) == "isinstance"
            and len(node.args) == 2
            and _engine_class(node.args[1])
        ):
            found.append(node.lineno)
        found += [test.lineno for test in tests if _asks(test)]
    return sorted(set(found))


def modules() -> dict[str, list[int]]:
    """Every module outside gate/engine/ and the opener, with its branch points."""
    found = {}
    for path in sorted(GATE.rglob("*.py")):
        name = path.relative_to(REPO).as_posix()
        if name.startswith("gate/engine/") or name in OPENER:
            continue
        found[name] = branch_points(ast.parse(path.read_text(encoding="utf-8"), name))
    return found


def test_no_module_outside_the_engine_asks_which_engine_it_runs_on():
    branching = {name: lines for name, lines in modules().items() if lines and name not in ALLOWED}
    assert not branching, (
        "these modules ask which engine they run on; take a store (gate.engine.seam.Store) and call "
        f"it, or ask a capability (store.shared) for what a person is told: {branching}"
    )


def test_every_module_allowed_to_branch_still_does():
    found = modules()
    stale = [name for name in ALLOWED if not found.get(name)]
    assert not stale, f"these modules no longer branch on the engine: take them off ALLOWED: {stale}"


def test_the_check_sees_a_branch_on_the_engine():
    for code in [
        "if opened.team is None:\n    pass",
        "x = a if team else b",
        "shared = memory.team is not None",
        "assert not facts.local",
        "ok = isinstance(facts, TeamFacts)",
        "[f for f in found if f.team]",
    ]:
        assert branch_points(ast.parse(code)), code
    for code in [
        "if memory.shared:\n    pass",
        "member = memory.team()",
        "where = memory.record.where",
        "if member is None:\n    pass",
    ]:
        assert not branch_points(ast.parse(code)), code


# -- the algorithms written once run over any engine's side of the seam ------------------------


class _Endpoint:
    remote = True
    max_distance = None

    def patient(self):
        return self

    def embed(self, texts, *, role, timeout):
        from gate.search.embeddings import Vectors

        return Vectors("m", [(1.0, 0.0)] * len(texts))


class _Refusing:
    """A VectorIndex whose store of vectors meets a read-only disk."""

    import apsw as _apsw

    faults = (_apsw.ReadOnlyError,)

    def __init__(self):
        import contextlib

        self.reading = self.changing = contextlib.nullcontext

    def available(self):
        return True

    def missing(self):
        return 2

    def needs_reference(self):
        return False

    def waiting(self, *, limit, chars):
        return [(1, "a fact"), (2, "another")]

    def sync(self, ids, prepared):
        raise self._apsw.ReadOnlyError("attempt to write a readonly database")

    def settle(self, hold):
        pass

    def store_reference(self, answer):
        return True


def test_a_search_catch_up_that_cannot_store_vectors_says_so_and_still_answers():
    from gate.search import lookup

    notes: list[str] = []
    assert lookup.catch_up_in(_Refusing(), _Endpoint(), notes) == 2
    assert notes and notes[0].startswith("facts waiting for a vector could not be given one")


def test_a_fault_the_index_does_not_name_is_raised():
    import pytest

    from gate.search import lookup

    index = _Refusing()
    index.faults = ()
    with pytest.raises(index._apsw.ReadOnlyError):
        lookup.catch_up_in(index, _Endpoint(), [])
