"""The house's rules, checked on the code (issue 14): the package's import graph has no
cycles, counting imports inside functions too (only ``if TYPE_CHECKING:`` blocks are left
out), and no module is over 500 lines but those :data:`LONGER` names (issue 29: one
concern may exceed it where splitting would scatter it). ``pytest
tests/unit/test_layout.py -v`` proves it."""

from __future__ import annotations

import ast

import pytest

from .codebase import PACKAGE, cycles, import_graph, modules, nodes, text

pytestmark = pytest.mark.unit

MAX_LINES = 500


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
    long = {str(f.relative_to(PACKAGE.parent)): n for f, _ in modules().values()
            if (n := len(text(f).splitlines())) > MAX_LINES}
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
        for cls in nodes(f):
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
