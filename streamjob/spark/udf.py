"""User functions in a Spark session (issue 31, docs/functions.md).

:func:`register` makes each user function a job's plan calls a temporary function of
the job's own session, vectorised: a pandas UDF (Arrow batches), never row by row. Its
code is the one the catalog registered: the module file is read again and its SHA-256
compared with the catalog's code hash before it is imported, so an edited file is
refused at START (:class:`~streamjob.exceptions.ChangedLogic`) like a changed query.
The module is pickled by value to the Python workers (PySpark's cloudpickle), so executors run the
same code as the driver without a path of the server on theirs.

A Hive UDF class (kind ``hive``, docs/functions.md "Hive UDF jars") becomes a temporary
function of Spark's Hive support, its jar added by Spark's resource loader (and so shipped
to the executors): :func:`~streamjob.spark.guard.create_hive_function`. The jar's bytes
are hashed again first, as a module file's are.

:func:`~streamjob.spark.guard.registered` tells the guard which names a session's SQL may
call beside the allowed built-ins.
"""

from __future__ import annotations

import sys
from typing import Iterable

from ..catalog.records import FunctionInfo
from ..exceptions import UserFunctionError, ValidationError
from ..udf import source as udf_source
from .guard import allow_functions, create_hive_function

__all__ = ["hive_support", "register"]


def hive_support(session) -> bool:
    """True when ``session``'s Spark runs with Hive support
    (``spark.sql.catalogImplementation=hive``,
    :func:`~streamjob.spark.session.spark_session`), which a Hive UDF class needs."""
    return session.conf.get("spark.sql.catalogImplementation", "in-memory") == "hive"


def _register_hive(session, f: FunctionInfo) -> None:
    """``f`` (a Hive UDF class in its jar) as a temporary function of ``session``.

    Raises:
        ValidationError: the session has no Hive support (the admin turned jar functions
            off), or Spark refuses the class (its message, no trace).
    """
    if not hive_support(session):
        raise ValidationError(
            f"function {f.database}.{f.name} is a Hive UDF class ({f.source}), and this "
            "job manager's Spark runs without Hive support: the admin turned jar functions "
            "off (streamjob.security.functions.jars=none)")
    try:
        create_hive_function(session, f.name, f.source, f.location)
    except Exception as exc:  # noqa: BLE001 - Spark's AnalysisException, a py4j error
        if not type(exc).__module__.startswith(("pyspark", "py4j")):
            raise
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ValidationError(f"function {f.database}.{f.name} ({f.source} in "
                              f"{f.location}): Spark refused it: {first}") from None


def _vectorised(name: str, fn, return_type: str):
    """``fn`` as a scalar pandas UDF returning ``return_type`` (a Spark DDL type); a
    callable that is a PySpark UDF already keeps its own function and type. An
    exception inside it becomes a :class:`UserFunctionError` naming the function."""
    import warnings

    from pyspark.sql.functions import pandas_udf
    from pyspark.util import PythonEvalType

    from ..columntypes import spark_type

    inner = getattr(fn, "func", fn)
    rtype = getattr(fn, "returnType", None) or spark_type(return_type)

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


def register(session, functions: Iterable[FunctionInfo]) -> None:
    """Register ``functions`` as temporary functions of ``session`` (idempotent).

    Raises:
        ChangedLogic: a function's module file (or package version) differs from the
            code the catalog registered.
        ValidationError: its module fails to import or lacks the callable; a Hive UDF
            class without Hive support, or refused by Spark.
    """
    from pyspark import cloudpickle  # the pickler PySpark ships UDFs with

    functions = tuple(functions)
    udf_source.check_unchanged(functions)
    for f in functions:
        if f.kind == "hive":
            _register_hive(session, f)
            allow_functions(session, [f.name])
            continue
        source = udf_source.of_record(f)
        fn = udf_source.load(source)
        module = sys.modules.get(getattr(fn, "__module__", "") or "")
        if source.kind == "file" and module is not None:
            cloudpickle.register_pickle_by_value(module)
        session.udf.register(f.name, _vectorised(f.name, fn, f.return_type))
        allow_functions(session, [f.name])
