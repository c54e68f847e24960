"""User functions in a Spark session (issue 31, docs/functions.md).

:func:`register` makes each user function a job's plan calls a temporary function of
the job's own session, vectorised: a pandas UDF (Arrow batches), never row by row. Its
code is the one the catalog registered: the module file is read again and its SHA-256
compared with the catalog's code hash before it is imported, so an edited file is
refused at START (:class:`~streamjob.exceptions.ChangedLogic`) like a changed query.
The module is pickled by value to the Python workers (PySpark's cloudpickle), so executors run the
same code as the driver without a path of the server on theirs.

An exception inside a function fails its micro-batch: :func:`guarded` raises a
:class:`~streamjob.exceptions.UserFunctionError` in its wire form, naming the function,
the exception and the first failing row's arguments (:func:`first_failing_row`); the
job's runner places it at the batch's input (streamjob/manager/failures.py).

A table function (kind ``python_table``, ``CREATE FUNCTION ... RETURNS TABLE``,
docs/functions.md "Table functions") becomes a Python UDTF of the session
(``spark.udtf.register``, Spark 4), called in FROM and LATERAL: :func:`table_function`
wraps its class so that an exception in ``eval`` (or ``terminate``) raises a
:class:`~streamjob.exceptions.UserFunctionError` naming the function and the very row
``eval`` was called with (Spark calls it once per input row).

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
from ..udf.positions import record_position
from .guard import allow_functions, allow_table_functions, create_hive_function

__all__ = ["first_failing_row", "guarded", "hive_support", "register", "table_function"]


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


#: Longest text of one argument value in a failure's report (characters).
ARGUMENT_CHARS = 80
#: Most rows of a failed Arrow batch tried one by one to find the failing row.
ROWS_TRIED = 10_000


def _parameters(fn, count: int) -> list[str]:
    """Names for ``count`` arguments of ``fn``: its parameters' names, ``argN`` past
    them (a ``*args`` callable) or when it has no readable signature."""
    import inspect

    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return [params[i].name if i < len(params) else f"arg{i + 1}" for i in range(count)]


def _shown(value) -> str:
    """``repr(value)`` (of the Python scalar of a NumPy one) cut to
    :data:`ARGUMENT_CHARS` characters."""
    try:
        text = repr(value.item() if hasattr(value, "item") else value)
    except Exception:  # noqa: BLE001 - an odd value: its type, never a second failure
        text = f"<{type(value).__name__}>"
    return text if len(text) <= ARGUMENT_CHARS else text[:ARGUMENT_CHARS - 3] + "..."


def _first_failing(fn, columns, error: type) -> tuple[int | None, tuple[tuple[str, str], ...]]:
    """The index of the first row of an Arrow batch on which ``fn`` alone raises
    ``error`` (or a subclass) and its argument values, as :func:`first_failing_row`;
    ``(None, ())`` if no single row of the first :data:`ROWS_TRIED` does."""
    if not columns or not hasattr(columns[0], "iloc"):
        return None, ()
    names = _parameters(fn, len(columns))
    for i in range(min(len(columns[0]), ROWS_TRIED)):
        row = [c.iloc[i:i + 1] for c in columns]
        try:
            fn(*row)
        except error:
            return i, tuple((n, _shown(c.iloc[0])) for n, c in zip(names, row))
        except Exception:  # noqa: BLE001 - another failure on its own: not this row
            continue
    return None, ()


def first_failing_row(fn, columns, error: type) -> tuple[tuple[str, str], ...]:
    """The argument values of the first row of an Arrow batch on which ``fn`` alone
    raises ``error`` (or a subclass): ``((parameter, shown value), ...)``, in call
    order; empty if no single row of the first :data:`ROWS_TRIED` does (a function
    that fails on the batch as a whole). ``columns`` are the pandas Series the batch
    was called with. Only the function's own arguments are shown, each cut to
    :data:`ARGUMENT_CHARS` characters. Runs only after the batch failed: the cost of
    a failure, not of a batch."""
    return _first_failing(fn, columns, error)[1]


def _record(at, index: int | None) -> str | None:
    """``topic t partition p offset o`` of row ``index`` from a call's hidden arguments
    ``at`` (:func:`streamjob.udf.positions.record_position`), or None."""
    if at is None or index is None:
        return None
    topic, partitions, offsets = at
    try:
        partition, offset = partitions.iloc[index], offsets.iloc[index]
        if partition is None or offset is None or partition != partition or offset != offset:
            return None  # NULL (NaN in pandas): a row the source gave no position
        return f"topic {topic} partition {int(partition)} offset {int(offset)}"
    except (IndexError, TypeError, ValueError):
        return None


def guarded(name: str, fn):
    """``fn`` (pandas Series in, a Series out) wrapped so that an exception in it
    raises a :class:`UserFunctionError` in its wire form naming the function ``name``,
    the exception's type and message, the first failing row's argument values
    (:func:`first_failing_row`) and, when the planner passed the hidden position
    arguments of a Kafka source (:mod:`streamjob.udf.positions`, taken off before
    ``fn`` is called), that row's record (topic, partition, offset); without the
    user's traceback."""
    def call(*columns):
        arguments, at = record_position(columns)
        try:
            return fn(*arguments)
        except Exception as exc:  # noqa: BLE001 - the user's code: named, no trace
            index, shown = _first_failing(fn, arguments, type(exc))
            raise UserFunctionError(name, type(exc).__name__, str(exc), shown,
                                    record=_record(at, index)).wire() from None
    return call


def _vectorised(name: str, fn, return_type: str | None):
    """``fn`` as a scalar pandas UDF returning ``return_type`` (a Spark DDL type); a
    callable that is a PySpark UDF already keeps its own function and type. An
    exception inside it becomes a :class:`UserFunctionError` naming the function
    (:func:`guarded`)."""
    import warnings

    from pyspark.sql.functions import pandas_udf
    from pyspark.util import PythonEvalType

    inner = getattr(fn, "func", fn)
    rtype = getattr(fn, "returnType", None) or return_type

    with warnings.catch_warnings():  # the eval type given, not read from type hints
        warnings.simplefilter("ignore", UserWarning)
        return pandas_udf(guarded(name, inner), returnType=rtype,
                          functionType=PythonEvalType.SQL_SCALAR_PANDAS_UDF)


def _eval_names(cls, args: tuple, kwargs: dict) -> tuple[tuple[str, str], ...]:
    """``((parameter, shown value), ...)`` of one ``eval`` call of a UDTF class: its
    positional arguments named after ``eval``'s parameters (without ``self``; ``argN``
    past them), then its named ones."""
    import inspect

    try:
        params = [p.name for p in list(inspect.signature(cls.eval).parameters.values())[1:]
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    named = [(params[i] if i < len(params) else f"arg{i + 1}", _shown(v))
             for i, v in enumerate(args)]
    return tuple(named + [(k, _shown(v)) for k, v in kwargs.items()])


def table_function(name: str, cls, return_type: str):
    """The UDTF class ``cls`` (Spark's Python UDTF protocol: ``eval`` yields rows, an
    optional ``terminate``) as a PySpark ``udtf`` returning rows of ``return_type``
    (``struct<col:type,...>``, a Spark DDL type), wrapped so that an exception in
    ``eval`` or ``terminate`` raises a :class:`UserFunctionError` in its wire form naming
    the function ``name``, the exception's type and message and the failing row (the
    arguments ``eval`` was called with; none for ``terminate``), without the user's
    traceback. The wrapper keeps ``eval``'s signature, so Spark's argument check is the
    class's own."""
    import functools

    from pyspark.sql.functions import udtf

    def failure(exc: Exception, arguments=()) -> Exception:
        return UserFunctionError(name, type(exc).__name__, str(exc), arguments).wire()

    class Guarded(cls):
        @functools.wraps(cls.eval)
        def eval(self, *args, **kwargs):
            try:
                rows = super().eval(*args, **kwargs)
                if rows is not None:
                    yield from rows
            except Exception as exc:  # noqa: BLE001 - the user's code: named, no trace
                raise failure(exc, _eval_names(cls, args, kwargs)) from None

        if callable(getattr(cls, "terminate", None)):
            @functools.wraps(cls.terminate)
            def terminate(self):
                try:
                    rows = super().terminate()
                    if rows is not None:
                        yield from rows
                except Exception as exc:  # noqa: BLE001 - as eval's
                    raise failure(exc) from None

    Guarded.__name__ = Guarded.__qualname__ = cls.__name__
    return udtf(Guarded, returnType=return_type)


def register(session, functions: Iterable[tuple[FunctionInfo, str | None]]) -> None:
    """Register ``functions`` as temporary functions of ``session`` (idempotent): pairs of
    a function and its RETURNS type as a Spark DDL type (None: the type its callable
    declares, a PySpark UDF's ``returnType``).

    Raises:
        ChangedLogic: a function's module file (or package version) differs from the
            code the catalog registered.
        ValidationError: its module fails to import or lacks the callable; a Hive UDF
            class without Hive support, or refused by Spark.
    """
    from pyspark import cloudpickle  # the pickler PySpark ships UDFs with

    functions = tuple(functions)
    udf_source.check_unchanged([f for f, _ in functions])
    for f, return_type in functions:
        if f.kind == "hive":
            _register_hive(session, f)
            allow_functions(session, [f.name])
            continue
        source = udf_source.of_record(f)
        fn = udf_source.load(source)
        module = sys.modules.get(getattr(getattr(fn, "func", fn), "__module__", "") or "")
        if source.kind == "file" and module is not None:
            cloudpickle.register_pickle_by_value(module)
        if f.is_table:
            cls = getattr(fn, "func", fn)  # a udtf(...) object's class, or the class
            session.udtf.register(f.name, table_function(f.name, cls, return_type))
            allow_table_functions(session, [f.name])
            continue
        session.udf.register(f.name, _vectorised(f.name, fn, return_type))
        allow_functions(session, [f.name])
