"""The code base as the house's tests read it (test_layout, test_package_cycles,
test_error_types, test_sql_policy_paths, test_doc_references): every module of
``streamjob`` and ``streamjob_tools``, each file read, parsed and walked once per test
process, however many questions those tests ask of it (issue 29: they parsed the whole
package about twenty times per run)."""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "streamjob"
TOOLS = ROOT / "tools" / "streamjob_tools"
"""The development tools' package (the benchmark, the local broker, the generators): not
shipped with streamjob, held to the same rules."""


@lru_cache(maxsize=None)
def text(path: Path) -> str:
    """The file's text (UTF-8)."""
    return path.read_text(encoding="utf-8")


@lru_cache(maxsize=None)
def tree(path: Path) -> ast.Module:
    """The parsed module at ``path``; shared, so callers must not change it."""
    return ast.parse(text(path), str(path))


@lru_cache(maxsize=None)
def nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of the module at ``path``, in :func:`ast.walk`'s order."""
    return tuple(ast.walk(tree(path)))


@lru_cache(maxsize=None)
def package_files(package: Path = PACKAGE) -> tuple[Path, ...]:
    """The ``.py`` files of ``package``, sorted."""
    return tuple(sorted(package.rglob("*.py")))


@lru_cache(maxsize=None)
def modules() -> dict[str, tuple[Path, bool]]:
    """``{dotted name: (file, is a package's __init__)}`` of every module of streamjob and
    of streamjob_tools."""
    out = {}
    for package in (PACKAGE, TOOLS):
        for f in package_files(package):
            parts = list(f.relative_to(package.parent).with_suffix("").parts)
            is_pkg = parts[-1] == "__init__"
            out[".".join(parts[:-1] if is_pkg else parts)] = (f, is_pkg)
    return out


def import_graph(type_checking: bool = False) -> dict[str, set[str]]:
    """``{module: modules of streamjob it imports}``, at any depth of the file; the
    imports of ``if TYPE_CHECKING:`` blocks too with ``type_checking`` (a module that
    needs another's names only for its annotations still knows of it). A fresh copy:
    callers may change it."""
    return {mod: set(deps) for mod, deps in _import_graph(type_checking).items()}


@lru_cache(maxsize=None)
def _import_graph(type_checking: bool) -> dict[str, frozenset[str]]:
    mods = modules()
    graph = {}
    for mod, (f, is_pkg) in mods.items():
        typing_only = set() if type_checking else {
            id(n) for node in nodes(f)
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for n in ast.walk(node)}
        deps = set()
        for node in nodes(f):
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
        graph[mod] = frozenset(d for d in deps if d in mods and d != mod)
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
