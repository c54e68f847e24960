"""Issue 13, point 8: a job's query calls only Spark built-ins from the allowlist; the
reflection functions (java_method stopped the job manager's JVM), file-reading ones and
IDENTIFIER('...') are refused at `check` and CREATE STREAMJOB with the name and its
position. These checks passed the queries on the main of 2026-11-23."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from streamjob.cli import main
from streamjob.policy.functions import REFUSED as DENIED, SPARK_FUNCTIONS

pytestmark = pytest.mark.unit

SETUP = ('CREATE STREAM s (k STRING, v BIGINT) TBLPROPERTIES ("topic"="t", '
         '"kafka.broker.list"="127.0.0.1:9");\n'
         'CREATE TABLE t (k STRING, v BIGINT) STORED AS JSON;\n')


def check(tmp_path, job_select: str):
    path = tmp_path / "job.sql"
    line = f'CREATE STREAMJOB j AS ("insert into t {job_select}");'
    path.write_text(SETUP + line + "\n")
    result = CliRunner().invoke(main, ["check", "--offline", str(path)], catch_exceptions=False,
                                env={"STREAMJOB_HOME": str(tmp_path / "home"), "COLUMNS": "200"})
    return result, line


@pytest.mark.parametrize("call, name", [
    ("java_method('java.lang.System', 'exit', 7)", "java_method"),
    ("reflect('java.lang.System', 'exit', 7)", "reflect"),
    ("TRY_REFLECT('java.lang.System', 'exit', 7)", "try_reflect"),
    ("`java_method`('java.lang.System', 'exit', 7)", "java_method"),
    ("system.builtin.reflect('java.lang.System', 'exit', 7)", "reflect"),
    ("IDENTIFIER('java_method')('java.lang.System', 'exit', 7)", "identifier"),
])
def test_reflection_is_refused_with_name_and_position(tmp_path, call, name):
    result, line = check(tmp_path, f"select k, cast({call} as bigint) from s")
    assert result.exit_code == 1, result.stdout
    bare = call.split("(")[0].strip("`").split(".")[-1]
    column = line.index(bare) + 1
    assert f"job.sql:3:{column}: error: function {name}() is not allowed" in result.stderr
    assert "Traceback" not in result.stderr


def test_where_and_nested_calls_are_checked_too(tmp_path):
    result, line = check(tmp_path, "select k, v from s where length(upper(java_method('a', 'b'))) > 0")
    assert result.exit_code == 1
    assert f"job.sql:3:{line.index('java_method') + 1}:" in result.stderr


def test_unknown_function_suggests_the_nearest_builtin(tmp_path):
    result, line = check(tmp_path, "select uper(k), v from s")
    assert result.exit_code == 1
    assert f"job.sql:3:{line.index('uper') + 1}: error: unknown function uper(): not a Spark " \
           "SQL built-in function; did you mean upper()?" in result.stderr


def test_builtins_tables_casts_and_window_calls_pass(tmp_path):
    result, _ = check(tmp_path, "(k, v) select concat_ws('-', k, cast(v as string)), "
                                "if(v > 0, coalesce(v, 0), nvl(v, 1)) from s where v in (1, 2)")
    assert result.exit_code == 0, result.stderr


def test_the_allowlist_is_spark_builtins_and_denies_each_with_a_reason():
    assert "upper" in SPARK_FUNCTIONS and "window" in SPARK_FUNCTIONS
    assert set(DENIED) - {"identifier"} <= set(SPARK_FUNCTIONS)
    assert all(len(reason) > 20 for reason in DENIED.values())
