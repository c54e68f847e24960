"""CREATE / DROP / SHOW / DESCRIBE FUNCTION through the executor, on a real SQLite
catalog (no Spark): where code may come from (the admin's function directories and
packages), the catalog's record, refusals (docs/functions.md, docs/security.md)."""

from __future__ import annotations

import hashlib
import sys

import pytest

from streamjob.catalog import Catalog
from streamjob.catalog.records import Role
from streamjob.exceptions import (ObjectExistsError, ObjectInUseError, ObjectNotFoundError,
                                  ParseError, ValidationError)
from streamjob.executor import Executor
from streamjob.grammar import parse_script
from streamjob.home import Home
from streamjob.security.policy import PolicyError

pytestmark = pytest.mark.unit

UDF = '''
import pandas as pd


def shout(s: pd.Series) -> pd.Series:
    return s.str.upper() + "!"


def add(a, b):
    return a + b


def many(*cols):
    return cols[0]
'''


@pytest.fixture
def home(tmp_path):
    home = Home.open(tmp_path / "home")
    fdir = tmp_path / "home" / "functions"
    fdir.mkdir()
    (fdir / "udfs.py").write_text(UDF)
    (fdir / "pkg").mkdir()
    (fdir / "pkg" / "__init__.py").write_text("")
    (fdir / "pkg" / "text.py").write_text(UDF)
    return home


def executor(home, tmp_path, role=Role.ADMIN):
    return Executor(Catalog(f"sqlite:///{tmp_path}/catalog.db"), home, role=role,
                    principal="local:tester")


def run(ex, script):
    out = None
    for stmt in parse_script(script):
        out = ex.execute(stmt)
    return out


def test_create_records_source_hash_and_owner(home, tmp_path):
    ex = executor(home, tmp_path)
    assert run(ex, "CREATE FUNCTION shout AS 'udfs:shout' RETURNS string").message == \
        "function default.shout created"
    f = ex.catalog.get_function("default", "shout")
    path = tmp_path / "home" / "functions" / "udfs.py"
    assert (f.source, f.kind, f.location) == ("udfs:shout", "python", str(path.resolve()))
    assert f.code_hash == hashlib.sha256(path.read_bytes()).hexdigest()
    assert (f.return_type, f.parameters, f.owner) == ("string", ("s",), "local:tester")
    run(ex, "CREATE TEMPORARY FUNCTION db2.plus AS 'pkg.text:add' RETURNS BIGINT LANGUAGE PYTHON;"
            "CREATE FUNCTION IF NOT EXISTS shout AS 'udfs:shout' RETURNS string")
    assert ex.catalog.get_function("db2", "plus").temporary
    with pytest.raises(ObjectExistsError):
        run(ex, "CREATE FUNCTION shout AS 'udfs:shout' RETURNS string")
    show = run(ex, "SHOW FUNCTIONS")
    assert show.rows == [("shout", "shout(s) -> string", "udfs:shout", "python")]
    desc = dict(run(ex, "DESCRIBE FUNCTION db2.plus").rows)
    assert desc["signature"] == "plus(a, b) -> bigint" and desc["owner"] == "local:tester"
    run(ex, "CREATE FUNCTION any_args AS 'udfs:many' RETURNS string")
    assert dict(run(ex, "DESC FUNCTION any_args").rows)["signature"] == "any_args(...) -> string"


def test_a_module_outside_the_admins_places_is_refused_before_import(home, tmp_path):
    outside = tmp_path / "evil"
    outside.mkdir()
    (outside / "evil_mod.py").write_text("raise SystemExit('imported')\n")
    sys.path.insert(0, str(outside))
    try:
        ex = executor(home, tmp_path)
        with pytest.raises(PolicyError) as info:
            run(ex, "CREATE FUNCTION f AS\n  'evil_mod:f' RETURNS int")
        assert "streamjob.security.functions.dirs" in info.value.message
        assert (info.value.line, info.value.column) == (2, 3)
        assert "evil_mod" not in sys.modules
        # a symbolic link out of the directory is refused too
        (tmp_path / "home" / "functions" / "linked.py").symlink_to(outside / "evil_mod.py")
        with pytest.raises(PolicyError, match="symbolic link"):
            run(ex, "CREATE FUNCTION f AS 'linked:f' RETURNS int")
        # an installed package is refused unless the admin names it
        with pytest.raises(PolicyError, match="functions.packages"):
            run(ex, "CREATE FUNCTION f AS 'json:dumps' RETURNS string")
    finally:
        sys.path.remove(str(outside))


def test_an_allowed_installed_package_is_hashed_by_its_version(tmp_path):
    from importlib import metadata

    home = Home.open(tmp_path / "home", {"streamjob.security.functions.packages": "sqlglot"})
    ex = executor(home, tmp_path)
    run(ex, "CREATE FUNCTION tr AS 'sqlglot:transpile' RETURNS array<string>")
    f = ex.catalog.get_function("default", "tr")
    dist = f"sqlglot=={metadata.version('sqlglot')}"
    assert (f.location, f.code_hash) == (dist, hashlib.sha256(dist.encode()).hexdigest())


@pytest.mark.parametrize("script, error, message", [
    ("CREATE FUNCTION f AS '/etc/passwd'", ValidationError, "is not 'package.module:callable'"),
    ("CREATE FUNCTION f AS 'udfs:missing' RETURNS int", ValidationError, "has no missing"),
    ("CREATE FUNCTION f AS 'udfs:add'", ValidationError, "needs RETURNS"),
    ("CREATE FUNCTION f AS 'udfs:add' RETURNS strng", ValidationError, "RETURNS strng"),
    ("CREATE FUNCTION upper AS 'udfs:shout' RETURNS string", ValidationError, "built-in"),
    ("CREATE FUNCTION strpos AS 'udfs:shout' RETURNS string", ValidationError, "built-in"),
    ("CREATE FUNCTION f AS 'udfs:add' LANGUAGE java", ParseError, "LANGUAGE JAVA names a Hive"),
    ("CREATE FUNCTION f AS 'udfs:add' LANGUAGE scala", ParseError, "LANGUAGE scala is not"),
    ("CREATE TEMPORARY FUNCTION f AS 'com.x.Udf'", ValidationError, "no jar given"),
    ("CREATE FUNCTION f AS 'udfs:add' USING JAR 'x.jar'", ParseError, "USING JAR is for a Hive"),
    ("ADD JAR 'missing.jar'", ValidationError, "does not exist in the admin's jar"),
    ("ADD JAR 'udfs.py'", ValidationError, "is not a jar"),
    ("DROP FUNCTION nope", ObjectNotFoundError, "does not exist"),
    ("DESCRIBE FUNCTION nope", ObjectNotFoundError, "does not exist"),
])
def test_refusals(home, tmp_path, script, error, message):
    ex = executor(home, tmp_path)
    with pytest.raises(error, match=message):
        run(ex, script)


def test_drop_is_refused_while_a_job_calls_the_function(home, tmp_path):
    ex = executor(home, tmp_path)
    run(ex, "CREATE FUNCTION shout AS 'udfs:shout' RETURNS string")
    ex.catalog.create_job("default", "j", "insert into t select shout(k) from s", {},
                          [("function", "default", "shout", "call")])
    with pytest.raises(ObjectInUseError, match="called by job default.j"):
        run(ex, "DROP FUNCTION shout")
    assert dict(run(ex, "DESCRIBE FUNCTION shout").rows)["jobs"] == "default.j"
    ex.catalog.drop_job("default", "j")
    assert run(ex, "DROP FUNCTION shout").message == "function default.shout dropped"
    assert run(ex, "DROP FUNCTION IF EXISTS shout").message == "function default.shout does not exist"


def test_a_viewer_may_only_show_and_describe_functions():
    from streamjob.api.auth import READ_ONLY
    from streamjob.grammar import statements as st

    assert issubclass(st.ShowFunctions, READ_ONLY) and issubclass(st.DescribeFunction, READ_ONLY)
    assert not issubclass(st.CreateFunction, READ_ONLY) and not issubclass(st.DropFunction, READ_ONLY)


SETUP = """
CREATE STREAM s (k STRING, v DOUBLE) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="localhost:9092");
CREATE TABLE out (k STRING, n DOUBLE) TBLPROPERTIES ("connector"="sql", "url"="sqlite:///{db}");
CREATE FUNCTION shout AS 'udfs:shout' RETURNS string;
CREATE FUNCTION plus AS 'udfs:add' RETURNS double;
"""


def script_head(tmp_path) -> str:
    """:data:`SETUP` with its SQLite sink under ``tmp_path``."""
    return SETUP.replace("{db}", str(tmp_path / "out.db"))


def test_a_job_may_call_its_databases_functions_and_records_them(home, tmp_path):
    ex = executor(home, tmp_path)
    run(ex, script_head(tmp_path))
    run(ex, "CREATE STREAMJOB j AS (\"insert into out select shout(k), plus(v, 1) from s\")")
    deps = ex.catalog.get_job("default", "j").dependencies
    assert ("function", "default", "shout", "call") in deps
    assert ("function", "default", "plus", "call") in deps
    with pytest.raises(ObjectInUseError, match="called by job default.j"):
        run(ex, "DROP FUNCTION plus")
    # EXPLAIN plans it too
    assert run(ex, "EXPLAIN STREAMJOB j") is not None


@pytest.mark.parametrize("select, message, column", [
    ("shout(k, k), v", "function shout(s) takes 1 argument, not 2", 26),
    ("shut(k), v", "unknown function shut(): not a Spark SQL built-in function; did you mean "
                   "shout()?", 26),
    ("k, plus(v)", "function plus(a, b) takes 2 arguments, not 1", 29),
    ("other.shout(k), v", "unknown function shout()", 32),
])
def test_a_wrong_call_is_an_error_at_its_place(home, tmp_path, select, message, column):
    ex = executor(home, tmp_path)
    run(ex, script_head(tmp_path))
    with pytest.raises(ValidationError) as info:
        run(ex, f'CREATE STREAMJOB j AS\n("insert into out select {select} from s")')
    assert message in info.value.message
    assert (info.value.line, info.value.column) == (2, column)


def test_another_databases_function_is_unknown(home, tmp_path):
    ex = executor(home, tmp_path)
    run(ex, script_head(tmp_path) + "CREATE FUNCTION db2.only_there AS 'udfs:shout' RETURNS string;")
    with pytest.raises(ValidationError, match="unknown function only_there"):
        run(ex, 'CREATE STREAMJOB j AS ("insert into out select only_there(k), v from s")')


def test_the_return_type_is_checked_against_the_sink(home, tmp_path):
    ex = executor(home, tmp_path)
    run(ex, script_head(tmp_path))
    from streamjob.planner.plan import plan_job

    plan = plan_job(ex.catalog, home, "default", "j", "insert into out select shout(k), v from s", {})
    assert plan.query.output_types[0] == "string"


def test_an_edited_function_file_is_refused_at_start(home, tmp_path):
    from streamjob.checkpoint.fingerprint import of_plan
    from streamjob.exceptions import ChangedLogic
    from streamjob.planner.plan import plan_job

    ex = executor(home, tmp_path)
    run(ex, script_head(tmp_path))
    query = "insert into out select shout(k), v from s"
    run(ex, f'CREATE STREAMJOB j AS ("{query}")')
    before = of_plan(plan_job(ex.catalog, home, "default", "j", query, {}))
    module = tmp_path / "home" / "functions" / "udfs.py"
    module.write_text(UDF.replace('"!"', '"?"'))
    with pytest.raises(ChangedLogic) as info:
        run(ex, "START STREAMJOB j")
    assert "function default.shout changed since CREATE FUNCTION" in info.value.message
    assert str(module.resolve()) in info.value.message
    module.write_text(UDF)  # restored: it starts
    run(ex, "START STREAMJOB j")
    # the fingerprint holds each called function's code hash (and only when it calls one)
    plain = of_plan(plan_job(ex.catalog, home, "default", "j",
                             "insert into out select k, v from s", {}))
    assert before.query != plain.query


def test_functions_of_derived_streams_and_previews_are_the_plans_too(home, tmp_path):
    from streamjob.planner.preview import plan_preview

    ex = executor(home, tmp_path)
    run(ex, script_head(tmp_path) + "CREATE STREAM loud AS SELECT shout(k) AS k, v FROM s;")
    run(ex, 'CREATE STREAMJOB j AS ("insert into out select k, plus(v, 2) from loud")')
    deps = ex.catalog.get_job("default", "j").dependencies
    assert {d for d in deps if d[0] == "function"} == {
        ("function", "default", "shout", "call"), ("function", "default", "plus", "call")}
    with pytest.raises(ObjectInUseError, match="called by job default.j"):
        run(ex, "DROP FUNCTION shout")
    preview = plan_preview(ex.catalog, home, "select shout(k) from loud", {},
                           default_database="default")
    assert [f.name for f in preview.functions] == ["shout"]


def test_the_guard_admits_only_the_sessions_registered_functions_by_bare_name():
    import json as _json

    from streamjob.exceptions import StreamJobError
    from streamjob.spark.guard import spark_parse_check

    def call(*parts):
        return _json.dumps([{"class": "org.apache.spark.sql.catalyst.analysis.UnresolvedFunction",
                             "nameParts": f"[{', '.join(parts)}]"}])

    spark_parse_check(call("upper"))
    spark_parse_check(call("shout"), frozenset({"shout"}))
    for tree, user in ((call("shout"), frozenset()), (call("db", "shout"), frozenset({"shout"}))):
        with pytest.raises(StreamJobError, match="shout"):
            spark_parse_check(tree, user)


def test_a_databases_functions_go_with_drop_database_cascade_only(home, tmp_path):
    ex = executor(home, tmp_path)
    run(ex, "CREATE FUNCTION db2.f AS 'udfs:shout' RETURNS string")
    assert ex.catalog.database_exists("db2")
    with pytest.raises(ObjectInUseError, match="function db2.f"):
        run(ex, "DROP DATABASE db2")
    run(ex, "DROP DATABASE db2 CASCADE")
    assert ex.catalog.get_function("db2", "f") is None


# ---------------------------------------------------------------- Hive UDF jars


@pytest.fixture
def jar_home(home):
    """``home`` with the example Hive UDF jar (text_udfs.jar) in its functions/."""
    from . import example_functions

    return example_functions.install(home)


def test_a_hive_function_records_its_class_jar_and_the_jars_hash(jar_home, tmp_path):
    ex = executor(jar_home, tmp_path)
    run(ex, "ADD JAR text_udfs.jar; CREATE TEMPORARY FUNCTION rev AS 'com.example.udf.Reverse'")
    f = ex.catalog.get_function("default", "rev")
    jar = (tmp_path / "home" / "functions" / "text_udfs.jar").resolve()
    assert (f.kind, f.source, f.location, f.return_type, f.parameters, f.temporary) == (
        "hive", "com.example.udf.Reverse", str(jar), None, None, True)
    assert f.code_hash == hashlib.sha256(jar.read_bytes()).hexdigest()
    assert dict(run(ex, "DESCRIBE FUNCTION rev").rows)["signature"] == "rev(...) -> ?"
    # SHOW CREATE gives Hive's self-contained form, which registers it again
    text = run(ex, "SHOW CREATE FUNCTION rev").rows[0][0]
    assert text == (f"CREATE TEMPORARY FUNCTION default.rev AS 'com.example.udf.Reverse' "
                    f"USING JAR '{jar}';")
    run(ex, "DROP FUNCTION rev")
    run(ex, text)
    assert ex.catalog.get_function("default", "rev").code_hash == f.code_hash


def test_jars_come_from_the_admins_jar_directories_for_every_role(jar_home, tmp_path):
    other = tmp_path / "opt" / "udfs"
    other.mkdir(parents=True)
    jar = tmp_path / "home" / "functions" / "text_udfs.jar"
    (other / "more.jar").write_bytes(jar.read_bytes())
    for role in (Role.ADMIN, Role.OPERATOR):
        ex = executor(jar_home, tmp_path, role)
        with pytest.raises(PolicyError, match="streamjob.security.functions.jars"):
            run(ex, f"ADD JAR '{other / 'more.jar'}'")
    admitted = Home.open(tmp_path / "home", {
        "streamjob.security.functions.jars": f"functions,{other}"})
    ex = executor(admitted, tmp_path, Role.OPERATOR)
    run(ex, f"ADD JAR 'file://{other / 'more.jar'}'; "
            "CREATE FUNCTION rev AS 'com.example.udf.Reverse' RETURNS string")
    assert ex.catalog.get_function("default", "rev").location == str((other / "more.jar").resolve())


def test_jars_none_turns_jar_functions_off(jar_home, tmp_path):
    off = Home.open(tmp_path / "home", {"streamjob.security.functions.jars": "none"})
    assert off.policy.function_jar_dirs == []
    ex = executor(off, tmp_path)
    with pytest.raises(PolicyError, match="none: jar functions are off"):
        run(ex, "CREATE FUNCTION rev AS 'com.example.udf.Reverse' USING JAR 'text_udfs.jar'")
