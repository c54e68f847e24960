"""The failing record's position in a Python function's error (issue 31, docs/functions.md
"Failures name the function"): which calls the planner gives the hidden position
arguments of a Kafka source (and which it leaves alone), the Kafka reader's hidden
columns, and the wrapper that takes the arguments off and names the record. No Spark:
the plans are the planner's over a SQLite catalog, the wrapper is called with pandas
Series as Spark's Python worker calls it."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
import pytest

from streamjob.catalog import Catalog
from streamjob.connectors.kafka.formats import RecordSlice
from streamjob.connectors.kafka.read import _with_positions, _without_positions
from streamjob.exceptions import UserFunctionError
from streamjob.executor import Executor
from streamjob.grammar import parse_script
from streamjob.home import Home
from streamjob.planner.bind import bind_job
from streamjob.planner.plan import plan_job
from streamjob.spark.udf import guarded
from streamjob.udf.positions import MARK, POSITION_COLUMNS

pytestmark = pytest.mark.unit

MODULE = "def picky(x):\n    return x\n"
SCRIPT = """
CREATE STREAM items (id BIGINT, name STRING, x DOUBLE)
  TBLPROPERTIES ("topic"="tp", "kafka.broker.list"="127.0.0.1:9", "format"="json");
CREATE STREAM loose (id BIGINT, x DOUBLE)
  TBLPROPERTIES ("topic"="tl", "kafka.broker.list"="127.0.0.1:9", "format"="json",
                 "malformed.policy"="skip");
CREATE TABLE names (id BIGINT, label STRING) STORED AS CSV LOCATION '{tmp}/names';
CREATE TABLE out (id BIGINT, v DOUBLE)
  TBLPROPERTIES ("connector"="sql", "url"="sqlite:///{tmp}/o.db", "primary.key"="id");
CREATE FUNCTION picky AS 'udfs:picky' RETURNS DOUBLE;
"""


@pytest.fixture
def planned(tmp_path):
    home = Home.open(tmp_path / "home", {})
    (tmp_path / "home" / "functions").mkdir()
    (tmp_path / "home" / "functions" / "udfs.py").write_text(MODULE)
    (tmp_path / "names").mkdir()
    catalog = Catalog(home.catalog_url)
    ex = Executor(catalog, home)
    for stmt in parse_script(SCRIPT.format(tmp=tmp_path)):
        ex.execute(stmt)
    yield lambda query: plan_job(catalog, home, "default", "j", query, {})
    catalog.close()


def test_a_call_over_one_kafka_source_gets_its_hidden_position_arguments(planned):
    plan = planned("insert into out select i.id, picky(x) from items i join names n "
                   "on i.id = n.id where picky(x) > 0")
    sql = plan.query.select_sql
    hidden = f"'{MARK}tp', `i`.`__sj_partition`, `i`.`__sj_offset`)"
    assert sql.count(hidden) == 2, sql  # in the select list and in WHERE
    [source] = bind_job(plan, read=False).sources
    assert source.declared.endswith("`__sj_partition` INT, `__sj_offset` BIGINT")


@pytest.mark.parametrize("query", [
    "insert into out select id, picky(max(x)) from items group by id",  # rows are groups
    "insert into out select distinct id, picky(x) from items",
    "insert into out select id, picky(x) from loose",  # tolerant: rows are not records
    "insert into out select a.id, picky(a.x + b.x) from items a join items b on a.id = b.id",
])
def test_calls_where_a_row_is_not_one_record_are_left_alone(planned, query):
    plan = planned(query)
    assert MARK not in plan.query.select_sql and "__sj_" not in plan.query.select_sql


def test_the_tolerant_source_reads_no_hidden_columns(planned):
    [source] = bind_job(planned("insert into out select id, picky(x) from loose"),
                        read=False).sources
    assert "__sj_" not in source.declared
    [plain] = bind_job(planned("insert into out select id, x from items"), read=False).sources
    assert "__sj_" not in plain.declared  # no Python function: nothing added


def test_the_kafka_reader_appends_each_records_partition_and_offset():
    from pyspark.sql.types import DoubleType, IntegerType, LongType, StructField, StructType

    schema = StructType([StructField("x", DoubleType()),
                         StructField(POSITION_COLUMNS[0], IntegerType()),
                         StructField(POSITION_COLUMNS[1], LongType())])
    declared, positions = _without_positions(schema)
    assert positions and declared.names == ["x"]
    assert _without_positions(declared) == (declared, False)
    records = RecordSlice("tp", 3, [17, 18, 20], [b"{}"] * 3, [None] * 3, [None] * 3)
    batch = _with_positions(pa.RecordBatch.from_pydict({"x": [1.0, 2.0, 3.0]}), records)
    assert batch.schema.names == ["x", *POSITION_COLUMNS]
    assert batch.column(1).to_pylist() == [3, 3, 3] and batch.column(2).to_pylist() == [17, 18, 20]
    fewer = _with_positions(pa.RecordBatch.from_pydict({"x": [1.0]}), records)
    assert fewer.column(2).to_pylist() == [None]  # rows not one per record: no position


def _picky(x: pd.Series) -> pd.Series:
    if (x > 2).any():
        raise ValueError("too large")
    return x


def test_the_wrapper_takes_the_hidden_arguments_off_and_names_the_record():
    call = guarded("picky", _picky)
    n = 4
    hidden = [pd.Series([MARK + "tp"] * n), pd.Series([1] * n), pd.Series([40, 41, 42, 43])]
    out = call(pd.Series([0.0, 1.0, 2.0, 1.5]), *hidden)
    assert out.tolist() == [0.0, 1.0, 2.0, 1.5]  # the function saw its own argument only
    with pytest.raises(UserFunctionError) as info:
        call(pd.Series([0.0, 1.0, 3.0, 4.0]), *hidden)
    back = UserFunctionError.from_text(str(info.value))  # the wire form, as the driver reads it
    assert back.record == "topic tp partition 1 offset 42"
    assert back.arguments == (("x", "3.0"),)
    assert str(back.at(5, "topic tp partition 1 offsets [40, 44)")) == (
        "function picky raised ValueError: too large; first failing row: picky(x=3.0); "
        "failing record: topic tp partition 1 offset 42; in micro-batch 5, input topic tp "
        "partition 1 offsets [40, 44)")
    with pytest.raises(UserFunctionError) as plain:  # without them: no record, as before
        call(pd.Series([3.0]))
    assert json.loads(str(plain.value).split(" ", 1)[1])["record"] is None
