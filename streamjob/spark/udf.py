"""User functions in a Spark session (issue 31, docs/functions.md).

:func:`register` makes each user function a job's plan calls a temporary function of
the job's own session, vectorised: a pandas UDF (Arrow batches), never row by row. Its
code is the one the catalog registered: the module file is read again and its SHA-256
compared with the catalog's code hash before it is imported, so an edited file is
refused at START (:class:`~streamjob.exceptions.ChangedLogic`) like a changed query.
The module is pickled by value to the Python workers (PySpark's cloudpickle), so executors run the
same code as the driver without a path of the server on theirs.

:func:`registered` tells :mod:`.guard` which names a session's SQL may call beside the
allowed built-ins.
"""

from __future__ import annotations

import sys
from typing import Iterable

from ..catalog.records import FunctionInfo
from ..exceptions import UserFunctionError
from ..udf import source as udf_source

__all__ = ["register", "registered"]

_ATTRIBUTE = "_streamjob_functions"


def registered(session) -> frozenset[str]:
    """The user functions :func:`register` made in ``session`` (lower-case names)."""
    return frozenset(getattr(session, _ATTRIBUTE, ()))


def _vectorised(name: str, fn, return_type: str | None):
    """``fn`` as a scalar pandas UDF returning ``return_type`` (a Spark DDL type); a
    callable that is a PySpark UDF already keeps its own function and type. An
    exception inside it becomes a :class:`UserFunctionError` naming the function."""
    import warnings

    from pyspark.sql.functions import pandas_udf
    from pyspark.util import PythonEvalType

    inner = getattr(fn, "func", fn)
    rtype = getattr(fn, "returnType", None) or return_type

    def call(*columns):  # pandas Series in, a Series out
        try:
            return inner(*columns)
        except Exception as exc:  # noqa: BLE001 - the user's code: named, no trace
            raise UserFunctionError(
                f"function {name} raised {type(exc).__name__}: {exc}") from None

    with warnings.catch_warnings():  # the eval type given, not read from type hints
        warnings.simplefilter("ignore", UserWarning)
        return pandas_udf(call, returnType=rtype,
                          functionType=PythonEvalType.SQL_SCALAR_PANDAS_UDF)


def register(session, functions: Iterable[tuple[FunctionInfo, str | None]]) -> None:
    """Register ``functions`` as temporary functions of ``session`` (idempotent): pairs of
    a function and its RETURNS type as a Spark DDL type (None: the type its callable
    declares, a PySpark UDF's ``returnType``).

    Raises:
        ChangedLogic: a function's module file (or package version) differs from the
            code the catalog registered.
        ValidationError: its module fails to import or lacks the callable.
    """
    from pyspark import cloudpickle  # the pickler PySpark ships UDFs with

    names = set(getattr(session, _ATTRIBUTE, ()))
    functions = tuple(functions)
    udf_source.check_unchanged([f for f, _ in functions])
    for f, return_type in functions:
        source = udf_source.of_record(f)
        fn = udf_source.load(source)
        module = sys.modules.get(getattr(fn, "__module__", "") or "")
        if source.kind == "file" and module is not None:
            cloudpickle.register_pickle_by_value(module)
        session.udf.register(f.name, _vectorised(f.name, fn, return_type))
        names.add(f.name)
    setattr(session, _ATTRIBUTE, names)
