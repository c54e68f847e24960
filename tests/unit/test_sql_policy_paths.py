"""Issue 28, point 1: every path from SQL text to Spark goes through the SQL policy.

Spark parses SQL in ``spark.sql(text)``, ``F.expr(text)``, ``selectExpr(text)`` (and
``where``/``filter`` given a text). This test walks the package's source and fails when
any module but :mod:`streamjob.spark.guard` makes such a call with anything but a
constant string; the guard itself takes only :class:`~streamjob.policy.CheckedSQL`, which
only the policy's renderer mints. On the main of 2026-11-27, ``spark/query.py``,
``spark/sessions.py`` (``F.expr`` of SESSIONWINDOW conditions) and ``spark/warmup.py``
called Spark with unchecked text."""

from __future__ import annotations

import ast

import pytest

from streamjob.exceptions import StreamJobError
from streamjob.policy import CheckedSQL
from streamjob.spark import guard

from . import codebase

pytestmark = pytest.mark.unit

PACKAGE = codebase.PACKAGE
#: The one module allowed to hand non-constant text to Spark's SQL parser.
GATE = PACKAGE / "spark" / "guard.py"
#: The modules allowed to mint CheckedSQL: the policy (after its checks) and the type.
MINTERS = {PACKAGE / "policy" / "__init__.py", PACKAGE / "policy" / "checked.py"}


def _constant(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def spark_sql_calls(tree: ast.AST) -> list[tuple[int, str]]:
    """``(line, call)`` of each call in ``tree`` that hands non-constant text to a SQL
    parser of Spark: ``x.sql(arg, ...)`` with a positional argument (sqlglot's
    ``node.sql(dialect=...)`` takes keywords), ``expr(...)``/``x.expr(...)``,
    ``x.selectExpr(...)``, and, in a module that imports pyspark, ``x.where``/``x.filter``
    given an f-string or a concatenation."""
    found = []
    uses_spark = any(isinstance(n, (ast.Import, ast.ImportFrom)) and "pyspark" in ast.unparse(n)
                     for n in ast.walk(tree))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else (
            func.id if isinstance(func, ast.Name) else None)
        args = list(node.args) + [k.value for k in node.keywords if k.arg in (None, "expr", "sqlQuery")]
        if name == "sql" and isinstance(func, ast.Attribute) and node.args:
            bad = not all(_constant(a) for a in node.args)
        elif name in ("expr", "selectExpr"):
            bad = not args or not all(_constant(a) for a in args)
        elif name in ("where", "filter") and isinstance(func, ast.Attribute) and node.args \
                and uses_spark:
            first = node.args[0]
            bad = isinstance(first, ast.JoinedStr) or (
                isinstance(first, ast.BinOp) and any(_constant(s) for s in (first.left, first.right)))
        else:
            continue
        if bad:
            found.append((node.lineno, ast.unparse(node)[:80]))
    return found


def test_no_module_but_the_gate_hands_unchecked_text_to_spark():
    offenders = []
    for path in codebase.package_files():
        if path == GATE:
            continue
        offenders += [f"{path.relative_to(PACKAGE)}:{line}: {call}"
                      for line, call in spark_sql_calls(codebase.tree(path))]
    assert offenders == [], ("SQL text reaches Spark outside streamjob/spark/guard.py "
                             "(route it through the SQL policy and guard.run_sql/expr):\n"
                             + "\n".join(offenders))


def test_only_the_policy_mints_checked_sql():
    offenders = []
    for path in codebase.package_files():
        if path in MINTERS:
            continue
        for node in codebase.nodes(path):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
                if name in ("mint", "CheckedSQL") or (name == "_restore" and isinstance(
                        f, ast.Name)):
                    offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert offenders == []


def test_the_walker_sees_each_form_of_call():
    """The walk above is not vacuous: each form of call, with variable text, is seen."""
    code = "\n".join([
        "from pyspark.sql import functions as F",
        "spark.sql(q)", "session.sql(f'select {x}')", "F.expr(cond)", "expr(cond)",
        "df.selectExpr(a, 'b')", "df.where(f'x > {y}')", "df.filter('a' + b)",
        "node.sql(dialect='spark')", "spark.sql('SHOW FUNCTIONS')", "df.selectExpr('sum(id)')",
        "query.where(Job.uid == uid)",
    ])
    lines = [line for line, _ in spark_sql_calls(ast.parse(code))]
    assert lines == [2, 3, 4, 5, 6, 7, 8]


def test_the_gate_refuses_text_that_did_not_pass_the_policy():
    with pytest.raises(StreamJobError, match="did not pass the SQL policy"):
        guard.run_sql(None, "select transform(a) using 'touch pwned' as (x) from s")
    with pytest.raises(StreamJobError, match="did not pass the SQL policy"):
        guard.checked_expr("reflect('java.lang.System', 'exit', 1) is null")
    with pytest.raises(TypeError):
        CheckedSQL("select 1")
