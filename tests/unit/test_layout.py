"""The house's rules, checked on the code (issue 14): the package's import graph has no
cycles, counting imports inside functions too (only ``if TYPE_CHECKING:`` blocks are left
out), and no module is over 500 lines but those :data:`LONGER` names (issue 29: one
concern may exceed it where splitting would scatter it). ``pytest
tests/unit/test_layout.py -v`` proves it."""

from __future__ import annotations

import pytest

import ast
from pathlib import Path

pytestmark = pytest.mark.unit

PACKAGE = Path(__file__).resolve().parents[2] / "streamjob"
TOOLS = PACKAGE.parent / "tools" / "streamjob_tools"
"""The development tools' package (the benchmark, the local broker, the generators): not
shipped with streamjob, held to the same rules."""
MAX_LINES = 500


def _modules() -> dict[str, tuple[Path, bool]]:
    """``{dotted name: (file, is a package's __init__)}`` of every module of streamjob and
    of streamjob_tools."""
    out = {}
    for package in (PACKAGE, TOOLS):
        for f in package.rglob("*.py"):
            parts = list(f.relative_to(package.parent).with_suffix("").parts)
            is_pkg = parts[-1] == "__init__"
            out[".".join(parts[:-1] if is_pkg else parts)] = (f, is_pkg)
    return out


def import_graph(type_checking: bool = False) -> dict[str, set[str]]:
    """``{module: modules of streamjob it imports}``, at any depth of the file; the
    imports of ``if TYPE_CHECKING:`` blocks too with ``type_checking`` (a module that
    needs another's names only for its annotations still knows of it)."""
    mods = _modules()
    graph = {}
    for mod, (f, is_pkg) in mods.items():
        tree = ast.parse(f.read_text())
        typing_only = set() if type_checking else {
            id(n) for node in ast.walk(tree)
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for n in ast.walk(node)}
        deps = set()
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.Import):
                deps |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = mod.split(".") if is_pkg else mod.split(".")[:-1]
                if node.level:
                    base = base[:len(base) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module
                for alias in node.names:
                    name = f"{target}.{alias.name}"
                    deps.add(name if name in mods else target)
        graph[mod] = {d for d in deps if d in mods and d != mod}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_import_graph_has_no_cycles():
    graph = import_graph()
    assert "streamjob.connectors.kafka.source" in graph  # the graph is really read
    assert "streamjob.connectors.kafka.read" in graph["streamjob.connectors.kafka.source"]
    assert "streamjob_tools.dev.broker" in graph["streamjob_tools.bench.harness"]
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


#: Modules allowed over MAX_LINES: one concern that splitting would scatter (docs/design.md,
#: "The rules of the layout"), each with why.
LONGER: dict[str, str] = {
    "streamjob/manager/server.py": "the job manager's passes: the single-lease holder's and a "
    "sharing server's follow the same runners, stops and ended jobs (the sharing state is "
    "in manager/share.py)",
    "streamjob/properties/definitions.py": "the property registry's one table (every job, "
    "engine and connector property with its type, default, range and scopes): the single "
    "source of docs/properties.md, read top to bottom",
    "streamjob/grammar/statements.py": "the statement types, one frozen dataclass per "
    "statement of the grammar, each with its docstring: the parser's one output "
    "vocabulary, which every client and the executor's handler table import",
}


def test_no_module_is_over_500_lines():
    long = {str(f.relative_to(PACKAGE.parent)): n for f, _ in _modules().values()
            if (n := len(f.read_text().splitlines())) > MAX_LINES}
    assert set(long) <= set(LONGER), {m: n for m, n in long.items() if m not in LONGER}


def test_the_examples_import():
    """The README's first command runs examples/flights/demo.py: its imports must follow
    the package when modules move (the house issue moved connectors.file_table)."""
    import importlib.util

    demo = PACKAGE.parent / "examples" / "flights" / "demo.py"
    spec = importlib.util.spec_from_file_location("streamjob_demo", demo)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # top level only: main() runs under __main__
    assert callable(module.main)


def test_the_executor_state_changes_in_its_own_file():
    """The statement modules of ``streamjob.executor`` (the Executor's bases, classes
    without ``__init__``) assign no attribute of ``self`` and mutate none of its dicts:
    the Executor's state is declared and changed in ``executor/__init__.py`` (issue 29)."""
    found = []
    for f in (PACKAGE / "executor").glob("*.py"):
        if f.name == "__init__.py":
            continue
        for cls in ast.walk(ast.parse(f.read_text())):
            if not isinstance(cls, ast.ClassDef) or any(
                    isinstance(n, ast.FunctionDef) and n.name == "__init__" for n in cls.body):
                continue
            for node in ast.walk(cls):
                targets = (node.targets if isinstance(node, ast.Assign) else
                           [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign))
                           else [])
                mutated = [node.func.value] if (
                    isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("update", "clear", "pop", "setdefault")) else []
                for t in targets + mutated:
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) \
                            and t.value.id == "self":
                        found.append(f"{f.name}:{node.lineno} self.{t.attr}")
    assert found == []
