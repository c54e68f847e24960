"""The only place where SQL text is handed to Spark's parser (DESIGN §9, issue 28).

``spark.sql(text)``, ``F.expr(text)`` and ``DataFrame.selectExpr(text)`` parse SQL inside
the job manager's JVM. streamjob calls them only here, and only with text the SQL policy
produced (:class:`~streamjob.policy.CheckedSQL`, made by :func:`streamjob.policy.render`
after every check); a plain ``str`` is refused. ``tests/unit/test_sql_policy_paths.py``
walks the package's source and fails when any other module calls ``.sql(...)``,
``expr(...)``, ``selectExpr(...)`` (or ``where``/``filter`` with a text) with anything
but a constant string.

Defence in depth against a difference between sqlglot's reading of the text and
Spark's: before running it, the text is parsed by Spark's own parser (no analysis, no
execution) and its unresolved plan is read back (``toJSON``): every function it calls
must be on the policy's function allowlist, and no script transformation or
table-valued function may appear, but for the table functions (Python UDTFs) registered
in the session by :func:`allow_table_functions`, called by their bare names. Either is a
bug of the policy, refused here.
"""

from __future__ import annotations

import json

from ..exceptions import StreamJobError
from ..policy.checked import CheckedSQL

__all__ = ["allow_functions", "allow_table_functions", "checked_expr", "create_hive_function", "registered", "registered_tables",
           "run_sql", "spark_parse_check"]

#: The session attribute holding the user functions registered in it (lower-case names).
_USER_FUNCTIONS = "_streamjob_functions"
#: The session attribute holding the table functions (UDTFs) registered in it.
_TABLE_FUNCTIONS = "_streamjob_table_functions"
#: Unresolved plan nodes of a table-valued function call (admitted for a registered UDTF).
_TVF = {"UnresolvedTableValuedFunction", "UnresolvedTVFAliases"}

#: Unresolved plan nodes that must never come out of Spark's parser for checked text.
_NEVER = {"ScriptTransformation", "UnresolvedTableValuedFunction", "UnresolvedTVFAliases"}
_FUNCTIONS = {"UnresolvedFunction", "UnresolvedGenerator"}


def _checked(text: object) -> CheckedSQL:
    if not isinstance(text, CheckedSQL):
        # a programming error: some path skipped the policy; nothing reaches Spark
        raise StreamJobError(
            "internal error: SQL text that did not pass the SQL policy was about to reach "
            "Spark; it was not run (docs/security.md, sql-policy)")
    return text


def _names(node) -> list[str]:
    parts = node.get("nameParts")
    if parts is None and isinstance(node.get("name"), str) and node["name"].startswith("["):
        parts = node["name"]  # a table-valued function's name: "[db, f]"
    if isinstance(parts, str):
        parts = [p.strip() for p in parts.strip("[]").split(",")]
    elif isinstance(node.get("name"), str):
        parts = [node["name"]]
    return [str(p).strip("`").lower() for p in (parts or []) if str(p).strip()]


def spark_parse_check(tree_json: str, user: frozenset[str] = frozenset(),
                      tables: frozenset[str] = frozenset()) -> None:
    """Check Spark's unresolved plan (or expression) of a checked text, as ``toJSON``
    gives it.

    Raises:
        StreamJobError: a script transformation, a table-valued function or a call of a
            function outside the allowlist and ``user`` (the user functions registered
            in the session; the policy let something through: not run), or a
            table-valued function other than the ``tables`` registered in the session
            (UDTFs, by bare name).
    """
    from ..policy.functions import ALLOWED_FUNCTIONS

    found: list[str] = []
    todo = [json.loads(tree_json)]
    while todo:
        item = todo.pop()
        if isinstance(item, list):
            todo.extend(item)
            continue
        if not isinstance(item, dict):
            continue
        kind = str(item.get("class", "")).rsplit(".", 1)[-1]
        if kind in _TVF and tables:
            names = _names(item)
            if len(names) != 1 or names[0] not in tables:
                found.append(kind)
        elif kind in _NEVER:
            found.append(kind)
        elif kind in _FUNCTIONS:
            names = _names(item)
            if names and names[-1] not in ALLOWED_FUNCTIONS and (
                    len(names) > 1 or names[-1] not in user):
                found.append(f"{names[-1]}()")
        todo.extend(item.values())
    if found:
        raise StreamJobError(
            f"internal error: Spark reads {', '.join(sorted(set(found)))} in SQL that passed "
            "the SQL policy; it was not run (docs/security.md, sql-policy)")


def _parser(session):
    return session._jsparkSession.sessionState().sqlParser()


def run_sql(session, text: CheckedSQL):
    """``session.sql(text)``: the DataFrame of a checked query, after Spark's own parse of
    it passed :func:`spark_parse_check`.

    Raises:
        StreamJobError: ``text`` is not a :class:`~streamjob.policy.CheckedSQL`, or Spark
            reads in it what the policy does not allow.
    """
    checked = _checked(text)
    spark_parse_check(_parser(session).parsePlan(checked).toJSON(), registered(session),
                      registered_tables(session))
    return session.sql(checked)


def checked_expr(text: CheckedSQL, session=None):
    """``pyspark.sql.functions.expr(text)``: the Column of a checked expression; with
    ``session``, after Spark's own parse of it passed :func:`spark_parse_check`.

    Raises:
        StreamJobError: ``text`` is not a :class:`~streamjob.policy.CheckedSQL`, or Spark
            reads in it what the policy does not allow.
    """
    from pyspark.sql import functions as F

    checked = _checked(text)
    if session is not None:
        spark_parse_check(_parser(session).parseExpression(checked).toJSON())
    return F.expr(checked)


def registered(session) -> frozenset[str]:
    """The user functions registered in ``session`` (lower-case names,
    :func:`allow_functions`): its SQL may call them beside the allowed built-ins."""
    return frozenset(getattr(session, _USER_FUNCTIONS, ()))


def allow_functions(session, names) -> None:
    """Add ``names`` (user functions :mod:`.udf` registered in ``session``) to the
    names its SQL may call."""
    setattr(session, _USER_FUNCTIONS, registered(session) | {n.lower() for n in names})


def registered_tables(session) -> frozenset[str]:
    """The table functions (Python UDTFs) registered in ``session`` (lower-case names,
    :func:`allow_table_functions`): its SQL may call them in FROM and LATERAL."""
    return frozenset(getattr(session, _TABLE_FUNCTIONS, ()))


def allow_table_functions(session, names) -> None:
    """Add ``names`` (table functions :mod:`.udf` registered in ``session``) to the
    table-valued functions its SQL may call."""
    setattr(session, _TABLE_FUNCTIONS, registered_tables(session) | {n.lower() for n in names})


def create_hive_function(session, name: str, class_name: str, jar: str) -> None:
    """Spark's ``CREATE OR REPLACE TEMPORARY FUNCTION `name` AS 'class' USING JAR 'jar'``
    in ``session`` (Spark's Hive support decides how a Hive UDF, GenericUDF, UDAF or
    UDTF class is called; the jar is added to the session and shipped to the executors
    by Spark's resource loader). Every part is checked here, so the text says nothing
    else: ``name`` an identifier, ``class_name`` a Java class name, ``jar`` a path
    without NUL (quoted, its quotes and backslashes escaped); the catalog's record of a
    function the executor admitted (docs/functions.md).

    Raises:
        StreamJobError: a part is not of its form (not run).
    """
    import re

    from ..grammar.lexical import JAVA_CLASS

    if not re.fullmatch(r"[a-z_][a-z0-9_]*", name) or not JAVA_CLASS.fullmatch(class_name) \
            or "\x00" in jar or "\n" in jar:
        raise StreamJobError(f"internal error: Hive function {name!r} ({class_name!r}, "
                             f"{jar!r}) is not of the checked form; it was not registered")
    quoted = jar.replace("\\", "\\\\").replace("'", "\\'")
    session.sql(f"CREATE OR REPLACE TEMPORARY FUNCTION `{name}` AS '{class_name}' "
                f"USING JAR '{quoted}'")
