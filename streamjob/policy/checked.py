"""The marker type of SQL text that passed the policy (:mod:`streamjob.policy`).

Spark is handed text only through :mod:`streamjob.spark.guard`, which takes nothing but a
:class:`CheckedSQL`; a ``CheckedSQL`` is made only by :func:`mint`, which only the
policy's renderers call after the text's tree passed every check (and
``tests/unit/test_sql_policy_paths.py`` fails when any other module calls ``mint``). A
plain ``str`` reaching the guard is a programming error, refused there.
"""

from __future__ import annotations

__all__ = ["CheckedSQL", "mint"]

_KEY = object()


class CheckedSQL(str):
    """Spark SQL text (a query, or one boolean expression) that passed the SQL policy.

    A ``str`` (it compares, hashes and formats as its text). ``CheckedSQL(text)`` is
    refused: only :func:`mint` makes one.

    Raises:
        TypeError: constructed without the policy's key.
    """

    __slots__ = ()

    def __new__(cls, text: str, key: object = None):
        if key is not _KEY:
            raise TypeError("CheckedSQL is made only by streamjob.policy (the SQL policy)")
        return super().__new__(cls, text)

    def __reduce__(self):  # pickled plans (e.g. to a worker) keep the marker
        return (_restore, (str(self),))

    def __repr__(self) -> str:
        return f"CheckedSQL({str.__repr__(self)})"


def _restore(text: str) -> CheckedSQL:
    return CheckedSQL(text, _KEY)


def mint(text: str) -> CheckedSQL:
    """``text`` marked as checked. Called only by the policy's renderers
    (:func:`streamjob.policy.render`), after the checks."""
    return CheckedSQL(text, _KEY)
