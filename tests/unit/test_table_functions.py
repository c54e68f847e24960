"""Table functions (``CREATE FUNCTION ... RETURNS TABLE``, Spark's Python UDTFs; issue 31,
docs/functions.md "Table functions") through the executor and the planner, on a real
SQLite catalog (no Spark): the catalog's record, the SQL policy admitting a registered
table function in FROM and LATERAL only, and refusing every other table-valued function
at its place."""

from __future__ import annotations

import json

import pytest

from streamjob.catalog import Catalog
from streamjob.catalog.records import TABLE_FUNCTION_KIND, Role
from streamjob.exceptions import ObjectInUseError, StreamJobError, ValidationError
from streamjob.executor import Executor
from streamjob.grammar import parse_script
from streamjob.home import Home
from streamjob.security.policy import PolicyError

pytestmark = pytest.mark.unit

UDTFS = '''
from pyspark.sql.functions import udtf


class Words:
    def eval(self, text):
        for w in (text or "").split():
            yield w, len(w)


@udtf(returnType="piece string")
class Pieces:
    def eval(self, text, sep):
        for p in (text or "").split(sep):
            yield (p,)


def scalar(s):
    return s
'''


@pytest.fixture
def home(tmp_path):
    home = Home.open(tmp_path / "home")
    fdir = tmp_path / "home" / "functions"
    fdir.mkdir()
    (fdir / "udtfs.py").write_text(UDTFS)
    return home


def executor(home, tmp_path, role=Role.ADMIN):
    return Executor(Catalog(f"sqlite:///{tmp_path}/catalog.db"), home, role=role,
                    principal="local:tester")


def run(ex, script):
    out = None
    for stmt in parse_script(script):
        out = ex.execute(stmt)
    return out


SETUP = """
CREATE STREAM s (id BIGINT, text STRING) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="localhost:9092");
CREATE TABLE out (id BIGINT, word STRING, n INT) TBLPROPERTIES ("connector"="sql", "url"="sqlite:///{db}");
CREATE FUNCTION explode_words AS 'udtfs:Words' RETURNS TABLE (word STRING, n INT);
CREATE FUNCTION pieces AS 'udtfs:Pieces';
CREATE FUNCTION scalar AS 'udtfs:scalar' RETURNS STRING;
"""


@pytest.fixture
def ex(home, tmp_path):
    ex = executor(home, tmp_path)
    run(ex, SETUP.replace("{db}", str(tmp_path / "out.db")))
    return ex


def test_returns_table_records_a_table_function(ex):
    f = ex.catalog.get_function("default", "explode_words")
    assert f.kind == TABLE_FUNCTION_KIND and f.is_table
    assert f.return_type == "struct<word:string,n:int>"
    assert f.parameters == ("text",)
    assert len(f.code_hash) == 64
    declared = ex.catalog.get_function("default", "pieces")  # a udtf(returnType=...) object
    assert declared.is_table and declared.return_type == "struct<piece:string>"
    assert declared.parameters == ("text", "sep")
    desc = dict(run(ex, "DESCRIBE FUNCTION explode_words").rows)
    assert desc["signature"] == "explode_words(text) -> table(word string, n int)"


@pytest.mark.parametrize("script, message", [
    ("CREATE FUNCTION f AS 'udtfs:scalar' RETURNS TABLE (a INT)", "is not a table function"),
    ("CREATE FUNCTION f AS 'udtfs:Words' RETURNS STRING", "write RETURNS TABLE"),
    ("CREATE FUNCTION f AS 'udtfs:Words'", "needs RETURNS TABLE"),
    ("CREATE FUNCTION f AS 'udtfs:Words' RETURNS TABLE (a strng)", "unknown column type"),
    ("CREATE FUNCTION f AS 'com.x.Udtf' RETURNS TABLE (a INT)", "a Hive UDF class is scalar"),
])
def test_refusals_of_create(ex, script, message):
    with pytest.raises(ValidationError, match=message):
        run(ex, script)


def test_a_table_function_outside_the_admins_places_is_refused(ex):
    with pytest.raises(PolicyError, match="not in the admin's function directories"):
        run(ex, "CREATE FUNCTION f AS 'elsewhere:Words' RETURNS TABLE (a INT)")


def test_a_viewer_cannot_create_a_table_function():
    from streamjob.api.auth import READ_ONLY

    stmt = parse_script("CREATE FUNCTION f AS 'udtfs:Words' RETURNS TABLE (a INT)")[0]
    assert not isinstance(stmt, READ_ONLY)


@pytest.mark.parametrize("query", [
    "insert into out select s.id, t.word, t.n from s, lateral explode_words(s.text) as t(word, n)",
    "insert into out select s.id, t.word, t.n from s join lateral explode_words(s.text) t(word, n)",
    "insert into out select id, word, n from s, lateral explode_words(text)",
    "insert into out select s.id, p.piece, 1 from s, lateral pieces(s.text, ',') p",
])
def test_a_registered_table_function_in_lateral_is_planned_and_recorded(ex, query):
    run(ex, f'CREATE STREAMJOB j AS ("{query}")')
    deps = ex.catalog.get_job("default", "j").dependencies
    assert any(d[0] == "function" and d[3] == "call" for d in deps), deps
    plan = run(ex, "EXPLAIN STREAMJOB j")
    assert plan is not None
    from streamjob.planner.plan import plan_job

    sql = plan_job(ex.catalog, ex.home, "default", "j", query, {}).query.select_sql.upper()
    assert "CROSS JOIN LATERAL" in sql and " ON " not in sql, sql  # the form a stream runs
    with pytest.raises(ObjectInUseError, match="called by job default.j"):
        run(ex, f"DROP FUNCTION {'pieces' if 'pieces' in query else 'explode_words'}")


def test_the_lateral_columns_and_types_are_the_functions(ex):
    from streamjob.planner.plan import plan_job

    plan = plan_job(ex.catalog, ex.home, "default", "j",
                    "insert into out select s.id, t.word, t.n from s, "
                    "lateral explode_words(s.text) as t(word, n)", {})
    assert plan.query.output_types == ["bigint", "string", "int"] or \
        list(plan.query.output_types) == ["bigint", "string", "int"]
    assert "LATERAL EXPLODE_WORDS" in plan.query.select_sql.upper()
    with pytest.raises(ValidationError, match="unknown column 'wurd'"):
        plan_job(ex.catalog, ex.home, "default", "j",
                 "insert into out select s.id, t.wurd, t.n from s, "
                 "lateral explode_words(s.text) as t(word, n)", {})


@pytest.mark.parametrize("select, message, at", [
    # unregistered and built-in TVFs keep their refusal, at their place
    ("s.id, r.id, 1 from s, lateral range(3) r",
     "table-valued function range() in LATERAL is not supported", "lateral"),
    ("id, col, 1 from s, lateral explode(array(1)) e",
     "table-valued function explode() in LATERAL is not supported", "lateral"),
    ("id, w, 1 from s, lateral nowhere(s.text) x", "unknown function nowhere()", "nowhere"),
    ("id, 'a', 1 from range(10)", "table-valued function range() in FROM is not supported",
     "range"),
    ("id, 'a', 1 from s, lateral scalar(s.text) x",
     "table-valued function scalar() in LATERAL is not supported", "lateral"),
    ("id, 'a', 1 from scalar('x')", "table-valued function scalar() in FROM is not supported",
     "scalar"),
    ("id, 'a', 1 from s, lateral explode_words(table(s)) x", "unknown function table()",
     "table"),
    # a table function as a value, or in LATERAL VIEW (Spark reads it in LATERAL only)
    ("id, explode_words(text), 1 from s", "explode_words() is a table function",
     "explode_words"),
    ("id, w, n from s lateral view explode_words(text) t as w, n",
     "is called as LATERAL explode_words(...)", "lateral"),
    ("s.id, t.word, t.n from s, lateral explode_words(s.text, 1) t",
     "takes 1 argument, not 2", "explode_words"),
    ("s.id, t.word, t.n from s, lateral explode_words(s.txt) t",
     "unknown column 'txt'", "txt"),
    ("s.id, t.word, t.n from s, lateral db2.explode_words(s.text) t", "", None),
    ("s.id, t.word, t.n from s, lateral explode_words(s.text) with ordinality t",
     "ORDINALITY in LATERAL is not supported", None),
    ("s.id, t.word, t.n from s join lateral explode_words(s.text) t on t.n > 1",
     "a lateral join takes no condition or side here", "on"),
    ("s.id, t.word, t.n from s left join lateral explode_words(s.text) t on true",
     "a lateral join takes no condition or side here", "left"),
])
def test_other_table_functions_are_refused_at_their_place(ex, select, message, at):
    head = 'CREATE STREAMJOB j AS\n("insert into out select '
    with pytest.raises(ValidationError) as info:
        run(ex, f'{head}{select}")')
    assert message in info.value.message, info.value.message
    if at is not None:
        column = len('("insert into out select ') + select.index(at) + 1
        assert (info.value.line, info.value.column) == (2, column), info.value


def test_a_table_function_in_from_and_in_a_preview(ex):
    from streamjob.planner.preview import plan_preview

    run(ex, "CREATE STREAMJOB j AS (\"insert into out select s.id, t.word, t.n from s, "
            "explode_words('a bb') t\")")
    assert ("function", "default", "explode_words", "call") in \
        ex.catalog.get_job("default", "j").dependencies
    preview = plan_preview(ex.catalog, ex.home, "select s.id, t.word from s, lateral "
                           "explode_words(s.text) t", {}, default_database="default")
    assert [f.name for f in preview.functions] == ["explode_words"]


def test_the_guard_admits_only_the_sessions_registered_table_functions():
    from streamjob.spark.guard import spark_parse_check

    def tvf(*parts):
        return json.dumps([{"class": "org.apache.spark.sql.catalyst.plans.logical.LateralJoin",
                            "right": [{"class": "org.apache.spark.sql.catalyst.analysis."
                                                "UnresolvedTableValuedFunction",
                                       "name": f"[{', '.join(parts)}]", "functionArgs": []}]}])

    spark_parse_check(tvf("EXPLODE_WORDS"), tables=frozenset({"explode_words"}))
    for tree, tables in ((tvf("range"), frozenset({"explode_words"})),
                         (tvf("explode_words"), frozenset()),
                         (tvf("db", "explode_words"), frozenset({"explode_words"}))):
        with pytest.raises(StreamJobError, match="UnresolvedTableValuedFunction"):
            spark_parse_check(tree, tables=tables)


def test_a_derived_stream_may_call_a_table_function(ex):
    run(ex, "CREATE STREAM words AS SELECT s.id, t.word, t.n FROM s, "
            "LATERAL explode_words(s.text) AS t(word, n);")
    run(ex, 'CREATE STREAMJOB j AS ("insert into out select id, word, n from words")')
    deps = ex.catalog.get_job("default", "j").dependencies
    assert ("function", "default", "explode_words", "call") in deps
    assert [c["type"] for c in ex.catalog.get_stream("default", "words").columns] == \
        ["bigint", "string", "int"]


def test_through_the_api_a_viewer_and_no_token_cannot_create_an_operator_can(tmp_path):
    """The HTTP API (DESIGN §9): a viewer's CREATE FUNCTION ... RETURNS TABLE is refused
    (403), a request without a token too (401); an operator registers one from the
    admin's function directory."""
    import httpx

    from streamjob.api.auth import new_token

    from .test_api import Api

    api = Api(tmp_path, f"sqlite:///{tmp_path}/home/catalog.db")
    try:
        fdir = tmp_path / "home" / "functions"
        fdir.mkdir(exist_ok=True)
        (fdir / "udtfs.py").write_text(UDTFS)
        viewer = new_token()
        api.catalog.create_token("reader", "viewer", viewer)
        create = "CREATE FUNCTION explode_words AS 'udtfs:Words' RETURNS TABLE (word STRING, n INT)"
        refused = api.sql(create, viewer)
        assert refused.status_code == 403 and "CreateFunction needs an operator" in refused.text
        anonymous = httpx.post(f"{api.url}/v1/statements", json={"sql": create}, timeout=30)
        assert anonymous.status_code == 401
        assert api.catalog.get_function("default", "explode_words") is None
        done = api.sql(create, api.token)
        assert done.status_code == 200, done.text
        assert api.catalog.get_function("default", "explode_words").is_table
    finally:
        api.close()


def test_show_create_function_gives_returns_table_back(ex):
    text = run(ex, "SHOW CREATE FUNCTION explode_words").rows[0][0]
    assert "RETURNS TABLE (word string, n int)" in text, text
    ex.catalog.drop_function("default", "explode_words")
    run(ex, text)  # the text creates the same function again
    assert ex.catalog.get_function("default", "explode_words").return_type == \
        "struct<word:string,n:int>"


def test_the_udtf_wrapper_raises_the_wire_form_with_the_row_and_keeps_rows():
    from streamjob.exceptions import UserFunctionError
    from streamjob.spark.udf import table_function

    class Splits:
        def eval(self, text, sep=" "):
            if text == "bad":
                raise KeyError("no bad")
            return [(p,) for p in text.split(sep)]

        def terminate(self):
            yield ("end",)
            raise RuntimeError("done badly")

    cls = table_function("splits", Splits, "struct<p:string>").func
    assert cls.__name__ == "Splits"
    assert list(cls().eval("a b")) == [("a",), ("b",)]
    with pytest.raises(Exception) as info:
        list(cls().eval("bad", sep=","))
    error = UserFunctionError.from_text(str(info.value))
    assert (error.function, error.error_type) == ("splits", "KeyError")
    assert error.arguments == (("text", "'bad'"), ("sep", "','"))
    rows = []
    with pytest.raises(Exception) as info:
        for row in cls().terminate():
            rows.append(row)
    assert rows == [("end",)]
    error = UserFunctionError.from_text(str(info.value))
    assert (error.error_type, error.error_message, error.arguments) == (
        "RuntimeError", "done badly", ())


def test_an_edited_table_function_is_refused_at_start(ex, tmp_path):
    from streamjob.exceptions import ChangedLogic

    run(ex, 'CREATE STREAMJOB j AS ("insert into out select s.id, t.word, t.n from s, '
            'lateral explode_words(s.text) t")')
    module = tmp_path / "home" / "functions" / "udtfs.py"
    module.write_text(UDTFS.replace("len(w)", "len(w) + 1"))
    with pytest.raises(ChangedLogic, match="function default.explode_words changed since "
                                           "CREATE FUNCTION"):
        run(ex, "START STREAMJOB j")
