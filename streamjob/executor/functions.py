"""CREATE / DROP / SHOW / DESCRIBE FUNCTION (issue 31, docs/functions.md).

A function is code the job manager runs, so where it comes from is the admin's decision
(docs/security.md "functions"): :func:`streamjob.udf.source.resolve` finds the module
file in the admin's function directories (or an allowed installed package) and checks
confinement *before* :func:`streamjob.udf.source.load` imports it. The rule is the same
for every principal; a viewer may only SHOW and DESCRIBE (the API's read-only set).
"""

from __future__ import annotations

import inspect

from ..catalog.records import TABLE_FUNCTION_KIND, FunctionInfo
from ..exceptions import ObjectNotFoundError, ValidationError
from ..grammar import statements as st
from ..policy.functions import SPARK_FUNCTIONS
from ..columntypes import check_type, ddl_struct
from ..udf import jars as udf_jars
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


def _table_function(obj) -> tuple[object, str | None] | None:
    """``(class, declared struct type or None)`` when ``obj`` is a table function: a
    PySpark ``udtf(...)`` object (its class and ``returnType``) or a class with an
    ``eval`` method (Spark's Python UDTF protocol); else None."""
    func = getattr(obj, "func", None)
    if isinstance(func, type) and callable(getattr(func, "eval", None)):
        try:
            returns = obj.returnType
        except Exception:  # noqa: BLE001 - a DDL text PySpark parses only with a session
            returns = getattr(obj, "_returnType", None)
        if hasattr(returns, "simpleString"):
            return func, returns.simpleString()
        return func, ddl_struct(returns) if isinstance(returns, str) else None
    if isinstance(obj, type) and callable(getattr(obj, "eval", None)):
        return obj, None
    return None


def _eval_parameters(cls) -> tuple[str, ...] | None:
    """The parameter names of a UDTF class's ``eval`` without ``self`` (None: ``*args``,
    or no readable signature)."""
    try:
        params = list(inspect.signature(cls.eval).parameters.values())[1:]
    except (TypeError, ValueError):
        return None
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        return None
    return tuple(p.name for p in params)


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

    def _do_AddJar(self, s: st.AddJar) -> Result:
        """ADD JAR: each jar must lie in the admin's jar directories (:mod:`streamjob.
        udf.jars`); it joins the session's jars, nothing runs yet."""
        found = [_at(lambda p=p: udf_jars.resolve_jar(p, self.home.policy),
                     "path" + (f".{i}" if i else "")) for i, p in enumerate(s.paths)]
        self.add_jars([j.path for j in found])
        return Result(f"added {', '.join(j.path for j in found)}")

    def _create_hive_function(self, s: st.CreateFunction, db: str, name: str) -> FunctionInfo:
        """The record of a Hive UDF class: found in its USING JAR jars, else in the
        session's ADD JAR jars (the last added first), each inside the admin's jar
        directories. Its code hash is the SHA-256 of the jar's bytes."""
        if s.jars:
            jars = [_at(lambda p=p: udf_jars.resolve_jar(p, self.home.policy),
                        "jar" + (f".{i}" if i else "")) for i, p in enumerate(s.jars)]
        else:
            jars = [udf_jars.resolve_jar(p, self.home.policy) for p in reversed(self.jars)]
        jar = next((j for j in jars if udf_jars.class_in_jar(j.path, s.source)), None)
        if jar is None:
            searched = ", ".join(j.path for j in jars)
            hint = (f"not in {searched}" if searched else
                    "no jar given: ADD JAR 'x.jar' first, or write USING JAR 'x.jar'")
            raise ValidationError(f"Hive UDF class {s.source}: {hint}", key="source",
                                  bad_value=True)
        returns = None
        if s.returns:
            try:
                returns = check_type(s.returns)
            except ValidationError as exc:
                raise ValidationError(f"RETURNS {s.returns}: {exc.message}", key="returns",
                                      bad_value=True) from None
        return FunctionInfo(database=db, name=name, kind="hive", source=s.source,
                            location=jar.path, return_type=returns, code_hash=jar.code_hash,
                            owner=getattr(self, "principal", None), temporary=s.temporary,
                            parameters=None)

    def _do_CreateFunction(self, s: st.CreateFunction) -> Result:
        db, name = self._function_name(s.name)
        if name in SPARK_FUNCTIONS or not _plain_call(name):
            raise ValidationError(f"function {name} is a Spark SQL built-in or a word of "
                                  "SQL; give yours another name")
        if s.language == "java":
            if s.table:
                raise ValidationError("RETURNS TABLE is for a Python table function (Spark's "
                                      "UDTF); a Hive UDF class is scalar", key="returns",
                                      bad_value=True)
            info = self._create_hive_function(s, db, name)
            created = self.catalog.create_function(info, if_not_exists=s.if_not_exists)
            state = "created" if created else "exists"
            return Result(f"function {db}.{name} {state}", object=f"{db}.{name}")
        try:
            source = udf_source.resolve(s.source, self.home.policy)
            obj = udf_source.load(source)
        except ValidationError as exc:  # at the quoted source
            if exc.key is not None or exc.line is not None:
                raise
            raise type(exc)(exc.message, key="source", bad_value=True) from None
        table = _table_function(obj)
        if s.table or table is not None:
            return self._create_table_function(s, db, name, source, obj, table)
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

    def _create_table_function(self, s: st.CreateFunction, db: str, name: str, source,
                               obj, table) -> Result:
        """The record of a Python table function (Spark's UDTF, docs/functions.md "Table
        functions"): a class with ``eval`` (or a ``udtf(...)`` object), whose rows have
        the columns of ``RETURNS TABLE (...)`` or of its declared ``returnType``. Its
        return type is recorded as ``struct<col:type,...>``.

        Raises:
            ValidationError: the source is not such a class, RETURNS is scalar, no
                columns are given or declared, a column type is unknown.
        """
        if table is None:
            raise ValidationError(
                f"function {db}.{name} RETURNS TABLE, but {source.reference} is not a table "
                "function: a class with an eval method (Spark's Python UDTF)", key="source",
                bad_value=True)
        if s.returns:
            raise ValidationError(
                f"{source.reference} is a table function (a class with eval): write RETURNS "
                f"TABLE (col type, ...), not RETURNS {s.returns}", key="returns",
                bad_value=True)
        cls, declared = table
        if callable(getattr(cls, "analyze", None)):
            raise ValidationError(
                f"{source.reference} has an analyze method (a schema decided per call): a "
                "table function's columns are fixed, by RETURNS TABLE (col type, ...) or "
                "its udtf(returnType=...); remove analyze", key="source", bad_value=True)
        if s.table:
            fields = []
            for column, written in s.table:
                try:
                    fields.append(f"{column}:{check_type(written)}")
                except ValidationError as exc:
                    raise ValidationError(f"RETURNS TABLE column {column} {written}: "
                                          f"{exc.message}", key="returns",
                                          bad_value=True) from None
            returns = f"struct<{','.join(fields)}>"
        elif declared:
            try:
                returns = check_type(declared)
            except ValidationError as exc:
                raise ValidationError(f"{source.reference} declares returnType {declared}: "
                                      f"{exc.message}", key="source", bad_value=True) from None
        else:
            raise ValidationError(
                f"table function {db}.{name} needs RETURNS TABLE (col type, ...): "
                f"{source.reference} does not declare its columns (a udtf(returnType=...) "
                "declares them)", key="source", bad_value=True)
        info = FunctionInfo(database=db, name=name, kind=TABLE_FUNCTION_KIND, source=source.reference,
                            location=source.path, return_type=returns,
                            code_hash=source.code_hash, owner=getattr(self, "principal", None),
                            temporary=s.temporary, parameters=_eval_parameters(cls))
        created = self.catalog.create_function(info, if_not_exists=s.if_not_exists)
        state = "created" if created else "exists"
        return Result(f"table function {db}.{name} {state}", object=f"{db}.{name}")

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


def _at(resolve, key: str):
    """``resolve()``, its error located at the statement's value ``key`` (a path)."""
    try:
        return resolve()
    except ValidationError as exc:
        if exc.key is not None or exc.line is not None:
            raise
        raise type(exc)(exc.message, key=key, bad_value=True) from None


def _signature(f: FunctionInfo) -> str:
    """``name(a, b) -> type`` (``name(...)`` for a variadic callable or a Hive UDF,
    whose type Hive decides when it is called: ``?`` without RETURNS); a table
    function's ``-> table(col type, ...)``."""
    args = "..." if f.parameters is None else ", ".join(f.parameters)
    returns = f.return_type or "?"
    if f.kind == TABLE_FUNCTION_KIND:
        from ..columntypes import struct_fields

        returns = "table(" + ", ".join(f"{n} {t}" for n, t in struct_fields(returns)) + ")"
    return f"{f.name}({args}) -> {returns}"
