"""The docs and docstrings name modules that exist (issue 29, "Smaller": docstrings named
modules that had moved). Every dotted name under streamjob or streamjob_tools (with an
optional name defined at the top of that module, ``streamjob.catalog.api.Catalog``),
every relative reference of a docstring (``:func:`~.policy.active```), every path of the
packages (``streamjob/catalog/api.py``, ``planner/text.py``), of the tests and of a test
(``test_layout.py::test_no_module_is_over_500_lines``) written in README.md, docs/, the
examples, or a docstring or comment of streamjob, streamjob_tools and the tests must
resolve in this checkout. A name the code spells as data (``streamjob.conf``, the topic
``streamjob.checkpoints``), a property name (``streamjob.catalog.url``) or a default
consumer group (``streamjob.default.job``) is not a module."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from functools import lru_cache
from pathlib import Path

import pytest

from streamjob.properties.definitions import CONNECTOR, ENGINE, JOB

from . import codebase

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {"streamjob": ROOT / "streamjob", "streamjob_tools": ROOT / "tools" / "streamjob_tools"}

DOTTED = re.compile(r"(?<![\w.$/-])(streamjob(?:_tools)?(?:\.[A-Za-z_]\w*)+)(?![\w-])")
"""A dotted name; one that goes on with a hyphen (the snapshot property
``streamjob.app-id``) is data."""
PATH = re.compile(r"(?<![\w./~$-])((?:[\w-]+/)+[\w-]+\.(?:py|lark)|(?:tools/)?streamjob(?:_tools)?"
                  r"/(?:\w+/)*\w+/)(?:::(\w+))?")

RELATIVE = re.compile(r":(?:mod|func|class|meth|data|attr|exc|obj):`~?(\.+[A-Za-z_][\w.]*)`")
TEST = re.compile(r"(?<![\w/.-])(test_\w+\.py)::(\w+)")

GENERATED = {"streamjob_tools.bench._compare_kafka", "streamjob_tools.bench._compare_source",
             "tools/streamjob_tools/bench/_compare_kafka/"}
"""Written by ``python -m streamjob_tools.bench --compare-source`` when it runs
(.gitignore)."""
CONSUMER_GROUPS = "streamjob.default."
"""A job's default consumer group is ``streamjob.<database>.<job>``: examples name jobs of
database ``default``."""


def _texts(path: Path) -> list[str]:
    """README/docs: the whole text; Python: its docstrings, other bare strings
    (attribute docstrings) and comments, never the code's own string literals."""
    text = codebase.text(path) if path.suffix == ".py" else path.read_text()
    if path.suffix != ".py":
        return [text]
    out = [node.value.value for node in codebase.nodes(path)
           if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
           and isinstance(node.value.value, str)]
    out += [tok.string for tok in tokenize.generate_tokens(io.StringIO(text).readline)
            if tok.type == tokenize.COMMENT]
    return out


def _sources() -> list[Path]:
    files = [ROOT / "README.md", *ROOT.glob("docs/**/*.md"), *ROOT.glob("examples/**/*.md"),
             *ROOT.glob("examples/**/*.sql")]
    for folder in ("streamjob", "tools", "tests", "examples"):
        files += [f for f in (ROOT / folder).rglob("*.py") if "__pycache__" not in f.parts]
    return files


@lru_cache(maxsize=None)
def _data_names() -> frozenset[str]:
    """Every ``streamjob.``-prefixed string literal of the package's code (file, topic
    and logger names), every property name and each dotted prefix of one."""
    names = {p.name for registry in (ENGINE, JOB, CONNECTOR) for p in registry}
    names |= {p.rsplit(".", k)[0] for p in list(names) for k in range(1, p.count(".") + 1)}
    for f in PACKAGES["streamjob"].rglob("*.py"):
        names |= {n.value for n in codebase.nodes(f)
                  if isinstance(n, ast.Constant) and isinstance(n.value, str)
                  and n.value.startswith("streamjob.")}
    return frozenset(names)


@lru_cache(maxsize=None)
def _module_file(dotted: str) -> Path | None:
    """The file (or data folder) of a dotted module name, None if there is none."""
    top, *rest = dotted.split(".")
    path = {**PACKAGES, "tests": ROOT / "tests"}[top].joinpath(*rest)
    if (path / "__init__.py").is_file():
        return path / "__init__.py"
    if path.with_suffix(".py").is_file():
        return path.with_suffix(".py")
    return path if rest and path.is_dir() else None


@lru_cache(maxsize=None)
def _top_level_names(module: Path) -> frozenset[str]:
    """Classes, functions, assigned names and imported names of a module."""
    names = set()
    for node in codebase.nodes(module):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return frozenset(names)


@lru_cache(maxsize=None)
def dotted_problem(ref: str) -> str | None:
    """Why ``streamjob.<module>[.<name>]`` names nothing, or None when it resolves."""
    if ref in GENERATED or ref in _data_names() or ref.startswith(CONSUMER_GROUPS):
        return None
    parts = ref.split(".")
    for i in range(len(parts), 0, -1):
        found = _module_file(".".join(parts[:i]))
        if found is None:
            continue
        if i == len(parts):
            return None
        if found.is_dir():
            return f"no module {'.'.join(parts[:i + 1])}"
        if parts[i] in _top_level_names(found):
            return None
        return f"module {'.'.join(parts[:i])} has no {parts[i]}"
    return "no such module"


@lru_cache(maxsize=None)
def path_problem(path: str, test: str | None) -> str | None:
    """Why a path (``streamjob/<folder>/<module>.py``, a package folder's
    ``<folder>/<module>.py``, ``tests/...``) names nothing, or None when it exists (with
    its test function, if ``::test`` given). Paths whose first folder is not one of this
    repository's (another project's files) are not judged."""
    if path in GENERATED:
        return None
    first = path.split("/", 1)[0]
    bases = [ROOT] if (ROOT / first).is_dir() else []
    bases += [base for base in PACKAGES.values() if (base / first).is_dir()]
    if not bases:
        return None
    found = [base / path for base in bases if (base / path).exists()]
    if not found:
        return "no such file"
    if test and not any(f.suffix == ".py" and test in _top_level_names(f) for f in found):
        return f"no test {test} there"
    return None


@lru_cache(maxsize=None)
def _all_modules() -> tuple[str, ...]:
    """Every module and package of streamjob, streamjob_tools and the tests, dotted."""
    out = set(PACKAGES)
    for top, base in {**PACKAGES, "tests": ROOT / "tests"}.items():
        for f in base.rglob("*.py"):
            parts = [top, *f.relative_to(base).with_suffix("").parts]
            out.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return tuple(sorted(out))


@lru_cache(maxsize=None)
def relative_problem(ref: str) -> str | None:
    """Why a docstring's relative reference (``.policy.active``) resolves nowhere: as
    Sphinx reads a leading dot, the name may be the suffix of any object's full name
    (``.plan.JobPlan`` is ``streamjob.planner.plan.JobPlan``)."""
    rest = ref.lstrip(".").rstrip(".")
    first = rest.split(".")[0]
    for module in _all_modules():
        parent = module[:-len(first) - 1]
        if module.endswith("." + first) and dotted_problem(f"{parent}.{rest}") is None:
            return None
        found = _module_file(module)
        if found is not None and found.is_file() and first in _top_level_names(found) \
                and dotted_problem(f"{module}.{rest}") is None:
            return None
    return f"no module or object ends in {rest}"


@lru_cache(maxsize=None)
def _test_ref_problem(name: str, test: str) -> str | None:
    """Why ``<test file>::<test>`` names no test of tests/unit or tests/integration."""
    found = [f for f in (ROOT / "tests" / "unit" / name, ROOT / "tests" / "integration" / name)
             if f.is_file()]
    if not found:
        return "no such test file"
    if not any(test in _top_level_names(f) for f in found):
        return f"no test {test} there"
    return None


def _problems() -> list[str]:
    out = set()
    for f in _sources():
        where = f.relative_to(ROOT)
        for text in _texts(f):
            for m in RELATIVE.finditer(text):
                if (why := relative_problem(m.group(1))) is not None:
                    out.add(f"{where}: {m.group(0)}: {why}")
            for m in TEST.finditer(text):
                if (why := _test_ref_problem(m.group(1), m.group(2))) is not None:
                    out.add(f"{where}: {m.group(0)}: {why}")
            for m in DOTTED.finditer(text):
                if (why := dotted_problem(m.group(1))) is not None:
                    out.add(f"{where}: {m.group(1)}: {why}")
            for m in PATH.finditer(text):
                if (why := path_problem(m.group(1), m.group(2))) is not None:
                    out.add(f"{where}: {m.group(0)}: {why}")
    return sorted(out)


def test_docs_and_docstrings_name_modules_that_exist():
    assert _problems() == []


def test_the_checker_finds_what_does_not_exist():
    assert dotted_problem("streamjob.catalog.api.Catalog") is None
    assert dotted_problem("streamjob.security.policy.AdminPolicy.of") is None
    assert dotted_problem("streamjob_tools.dev.flights") is None
    assert dotted_problem("streamjob.catalog.url") is None  # a property
    assert dotted_problem("streamjob.conf") is None  # the home's file, spelt by the code
    assert dotted_problem("streamjob.foo.bar") == "module streamjob has no foo"
    assert dotted_problem("streamjob.bench") == "module streamjob has no bench"  # tools now
    assert dotted_problem("streamjob.sensitive.resolve") == "module streamjob.sensitive has no resolve"
    assert path_problem("streamjob/connectors/kafka/source.py", None) is None
    assert path_problem("planner/text.py", None) is None
    assert path_problem("streamjob/dev/flights.py", None) == "no such file"
    assert path_problem("tests/unit/test_layout.py", "test_no_module_is_over_500_lines") is None
    assert path_problem("tests/unit/test_layout.py", "test_gone") == "no test test_gone there"
    assert path_problem("consumer/fetcher.py", None) is None  # kafka-python's, not judged
    assert _test_ref_problem("test_layout.py", "test_no_module_is_over_500_lines") is None
    assert relative_problem(".plan.JobPlan") is None
    assert relative_problem(".policy.active") is None
    assert relative_problem(".kafka_source.read_range") == (
        "no module or object ends in kafka_source.read_range")
    assert _test_ref_problem("test_gone.py", "test_x") == "no such test file"
