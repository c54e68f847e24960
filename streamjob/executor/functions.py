"""CREATE / DROP / SHOW / DESCRIBE FUNCTION (issue 31, docs/functions.md).

A function is code the job manager runs, so where it comes from is the admin's decision
(docs/security.md "functions"): :func:`streamjob.udf.source.resolve` finds the module
file in the admin's function directories (or an allowed installed package) and checks
confinement *before* :func:`streamjob.udf.source.load` imports it. The rule is the same
for every principal; a viewer may only SHOW and DESCRIBE (the API's read-only set).
"""

from __future__ import annotations

import inspect

from ..catalog.records import FunctionInfo
from ..exceptions import ObjectNotFoundError, ValidationError
from ..grammar import statements as st
from ..policy.functions import SPARK_FUNCTIONS
from ..columntypes import check_type
from ..udf import source as udf_source
from .databases import did_you_mean
from .result import Result


def _declared(obj) -> tuple[str | None, tuple[str, ...] | None]:
    """The Spark return type a callable declares (a PySpark UDF object's
    ``returnType``) and its parameter names (None: ``*args``)."""
    returns = getattr(obj, "returnType", None)
    text = returns.simpleString() if hasattr(returns, "simpleString") else None
    func = getattr(obj, "func", obj)
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return text, None
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        return text, None
    return text, tuple(p.name for p in params)


def _plain_call(name: str) -> bool:
    """True when ``name(x)`` reads as a call of an unknown function (sqlglot's
    ``Anonymous``), so the query reaches Spark with the name as written: a name sqlglot
    knows (``strpos``) would be rewritten to another one."""
    from sqlglot import exp, parse_one
    from sqlglot.errors import SqlglotError

    try:
        node = parse_one(f"{name}(x)", read="hive")
    except SqlglotError:
        return False
    return isinstance(node, exp.Anonymous) and node.name.lower() == name


class FunctionStatements:
    """Function statements of :class:`~streamjob.executor.Executor`."""

    def _function_name(self, name: st.QualifiedName) -> tuple[str, str]:
        db, fn = self._names(name, "function")
        return db, fn.lower()

    def _do_CreateFunction(self, s: st.CreateFunction) -> Result:
        db, name = self._function_name(s.name)
        if name in SPARK_FUNCTIONS or not _plain_call(name):
            raise ValidationError(f"function {name} is a Spark SQL built-in or a word of "
                                  "SQL; give yours another name")
        try:
            source = udf_source.resolve(s.source, self.home.policy)
            obj = udf_source.load(source)
        except ValidationError as exc:  # at the quoted source
            if exc.key is not None or exc.line is not None:
                raise
            raise type(exc)(exc.message, key="source", bad_value=True) from None
        declared, parameters = _declared(obj)
        returns = s.returns or declared
        if returns is None:
            raise ValidationError(
                f"function {db}.{name} needs RETURNS <type>: {source.reference} does not "
                "declare its return type (a pandas_udf declares it)", key="source",
                bad_value=True)
        try:
            returns = check_type(returns)
        except ValidationError as exc:
            raise ValidationError(f"RETURNS {returns}: {exc.message}", key="returns",
                                  bad_value=True) from None
        info = FunctionInfo(database=db, name=name, kind="python", source=source.reference,
                            location=source.path, return_type=returns,
                            code_hash=source.code_hash, owner=getattr(self, "principal", None),
                            temporary=s.temporary, parameters=parameters)
        created = self.catalog.create_function(info, if_not_exists=s.if_not_exists)
        state = "created" if created else "exists"
        return Result(f"function {db}.{name} {state}", object=f"{db}.{name}")

    def _do_DropFunction(self, s: st.DropFunction) -> Result:
        db, name = self._function_name(s.name)
        if not self.catalog.drop_function(db, name, if_exists=s.if_exists):
            return Result(f"function {db}.{name} does not exist", object=f"{db}.{name}")
        return Result(f"function {db}.{name} dropped", object=f"{db}.{name}")

    def _do_ShowFunctions(self, s: st.ShowFunctions) -> Result:
        rows = [(f.name, _signature(f), f.source, f.kind)
                for f in self.catalog.list_functions(self.database)]
        return Result(columns=("function", "signature", "source", "kind"), rows=rows,
                      title=f"functions of {self.database}")

    def _do_DescribeFunction(self, s: st.DescribeFunction) -> Result:
        db, name = self._function_name(s.name)
        f = self.catalog.get_function(db, name)
        if f is None:
            known = [x.name for x in self.catalog.list_functions(db)]
            raise ObjectNotFoundError(f"function {db}.{name} does not exist{did_you_mean(name, known)}")
        jobs = self.catalog.function_users(db, name)
        rows = [("signature", _signature(f)), ("kind", f.kind), ("source", f.source),
                ("location", f.location), ("code hash", f.code_hash),
                ("owner", f.owner), ("temporary", "yes" if f.temporary else "no"),
                ("created", f.created_at.isoformat(timespec="seconds") if f.created_at else None),
                ("jobs", ", ".join(jobs) or None)]
        return Result(columns=("property", "value"), rows=rows, title=f"function {db}.{name}",
                      object=f"{db}.{name}")


def _signature(f: FunctionInfo) -> str:
    """``name(a, b) -> type`` (``name(...)`` for a variadic callable)."""
    args = "..." if f.parameters is None else ", ".join(f.parameters)
    return f"{f.name}({args}) -> {f.return_type}"
