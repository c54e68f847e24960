"""The only place where SQL text is handed to Spark's parser (DESIGN §9, issue 28).

``spark.sql(text)``, ``F.expr(text)`` and ``DataFrame.selectExpr(text)`` parse SQL inside
the job manager's JVM. streamjob calls them only here, and only with text the SQL policy
produced (:class:`~streamjob.policy.CheckedSQL`, made by :func:`streamjob.policy.render`
after every check); a plain ``str`` is refused. ``tests/unit/test_sql_policy_paths.py``
walks the package's source and fails when any other module calls ``.sql(...)``,
``expr(...)``, ``selectExpr(...)`` (or ``where``/``filter`` with a text) with anything
but a constant string.
"""

from __future__ import annotations

from ..exceptions import StreamJobError
from ..policy.checked import CheckedSQL

__all__ = ["checked_expr", "run_sql"]


def _checked(text: object) -> CheckedSQL:
    if not isinstance(text, CheckedSQL):
        # a programming error: some path skipped the policy; nothing reaches Spark
        raise StreamJobError(
            "internal error: SQL text that did not pass the SQL policy was about to reach "
            "Spark; it was not run (docs/security.md, sql-policy)")
    return text


def run_sql(session, text: CheckedSQL):
    """``session.sql(text)``: the DataFrame of a checked query.

    Raises:
        StreamJobError: ``text`` is not a :class:`~streamjob.policy.CheckedSQL`.
    """
    checked = _checked(text)
    return session.sql(checked)


def checked_expr(text: CheckedSQL):
    """``pyspark.sql.functions.expr(text)``: the Column of a checked expression.

    Raises:
        StreamJobError: ``text`` is not a :class:`~streamjob.policy.CheckedSQL`.
    """
    from pyspark.sql import functions as F

    checked = _checked(text)
    return F.expr(checked)
