"""The static-table readers of streamjob.connectors.static without Spark: value
conversion, column matching, file listing (manifest, hidden files, partitions) and
whole-table reads of SQLite tables and Parquet/CSV/JSON files. The stream-static joins
that re-read them at each micro-batch run in tests/integration/test_files_and_static.py."""

from __future__ import annotations

import datetime as dt
import decimal
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa
from pyspark.sql.types import (ArrayType, BinaryType, BooleanType, DateType, DecimalType,
                               IntegerType, LongType, MapType, StringType, StructField,
                               StructType, TimestampType)

from streamjob.connectors.static import (arrow_column, check_sql_table, column_map,
                                             read_file_table, read_sql_table, table_files)
from streamjob.exceptions import ConnectorError

pytestmark = pytest.mark.unit

UTC = dt.timezone.utc


def schema(**fields) -> StructType:
    return StructType([StructField(n, t) for n, t in fields.items()])


def rows(batches) -> list[dict]:
    return [r for b in batches for r in b.to_pylist()]


# ------------------------------------------------------------------ values


def test_values_are_converted_as_spark_casts_would():
    ts = pa.timestamp("us", tz="UTC")
    assert arrow_column(["2024-01-02 03:04:05.000000", None], ts, what="t").to_pylist() == [
        dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC), None]  # SQLite's UTC text
    assert arrow_column(["2024-01-02T05:04:05+02:00"], ts, what="t")[0].as_py() == \
        dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert arrow_column([1.0, "2", decimal.Decimal("3.7"), "4.5"], pa.int64(),
                        what="t").to_pylist() == [1, 2, 3, 4]
    assert arrow_column([1.555, "2"], pa.decimal128(10, 2), what="t").to_pylist() == [
        decimal.Decimal("1.56"), decimal.Decimal("2.00")]
    assert arrow_column([1, 0, "true", "F"], pa.bool_(), what="t").to_pylist() == [
        True, False, True, False]
    assert arrow_column(["2024-01-02", dt.datetime(2024, 1, 3, 4)], pa.date32(),
                        what="t").to_pylist() == [dt.date(2024, 1, 2), dt.date(2024, 1, 3)]
    # complex values as the SQL sink stores them: JSON text
    assert arrow_column(["[1, 2]"], pa.list_(pa.int32()), what="t").to_pylist() == [[1, 2]]
    assert arrow_column(['{"A": 1, "b": "x"}'], pa.struct([("a", pa.int32()), ("b", pa.string())]),
                        what="t").to_pylist() == [{"a": 1, "b": "x"}]
    assert arrow_column(['{"k": 1}'], pa.map_(pa.string(), pa.int32()),
                        what="t").to_pylist() == [[("k", 1)]]
    assert arrow_column([7, True, {"a": 1}], pa.string(), what="t").to_pylist() == [
        "7", "true", '{"a": 1}']
    assert arrow_column(["eHk="], pa.binary(), what="t", binary_text="base64").to_pylist() == [b"xy"]
    assert arrow_column(["xy"], pa.binary(), what="t").to_pylist() == [b"xy"]


def test_a_value_that_does_not_convert_names_column_and_value():
    with pytest.raises(ConnectorError, match=r"table t, column 'n': cannot read 'x1' as int64"):
        arrow_column([1, "x1"], pa.int64(), what="table t, column 'n'")
    with pytest.raises(ConnectorError, match="'abc' as bool"):
        arrow_column(["abc"], pa.bool_(), what="c")


def test_columns_are_matched_by_name_then_by_position():
    assert column_map(["Manager", "REGION"], ["region", "manager"], "t") == [1, 0]
    assert column_map(["a", "b"], ["region", "manager"], "t") == [0, 1]
    with pytest.raises(ConnectorError, match=r"t has no column manager \(it has region, x, y\)"):
        column_map(["region", "x", "y"], ["region", "manager"], "t")


# ------------------------------------------------------------------ SQL tables


@pytest.fixture
def sqlite_table(tmp_path):
    url = f"sqlite:///{tmp_path / 'static.db'}"
    engine = sa.create_engine(url)
    table = sa.Table("Regions", sa.MetaData(), sa.Column("Manager", sa.Text),
                     sa.Column("region", sa.Text), sa.Column("since", sa.DateTime),
                     sa.Column("floor", sa.Integer), sa.Column("extra", sa.Text))
    with engine.begin() as conn:
        table.create(conn)
        conn.execute(table.insert(), [
            {"Manager": f"m{i}", "region": f"r{i}", "since": dt.datetime(2024, 1, 1, i),
             "floor": i, "extra": "x"} for i in range(5)])
    yield url, engine, table
    engine.dispose()


def test_a_sqlite_table_is_read_whole_in_bounded_batches(sqlite_table):
    url, engine, table = sqlite_table
    declared = schema(region=StringType(), manager=StringType(), since=TimestampType(),
                      floor=LongType())
    batches = list(read_sql_table(url, "Regions", declared, batch_rows=2))
    assert [b.num_rows for b in batches] == [2, 2, 1]
    assert rows(batches)[3] == {"region": "r3", "manager": "m3",
                                "since": dt.datetime(2024, 1, 1, 3, tzinfo=UTC), "floor": 3}
    with engine.begin() as conn:  # each read is a new query: it sees what was added
        conn.execute(table.insert(), [{"Manager": "new", "region": "r9"}])
    assert len(rows(read_sql_table(url, "Regions", declared))) == 6
    check_sql_table(url, "Regions", declared.names)


def test_sql_table_errors_name_the_table(sqlite_table):
    url, _, _ = sqlite_table
    with pytest.raises(ConnectorError, match=r"SQL table 'nowhere' at sqlite:///.* does not exist"):
        check_sql_table(url, "nowhere", ["a"])
    with pytest.raises(ConnectorError, match="has no column boss"):
        check_sql_table(url, "Regions", ["region", "boss"])
    with pytest.raises(ConnectorError, match="cannot read SQL table 'nowhere'"):
        list(read_sql_table(url, "nowhere", schema(a=StringType())))


# ------------------------------------------------------------------ file tables


def test_table_files_honour_the_manifest_and_skip_hidden_files(tmp_path):
    plain = tmp_path / "plain"
    for rel in ("a=1/b=x%20y/part-0.parquet", "a=__HIVE_DEFAULT_PARTITION__/b=z/part-1.parquet",
                "_temporary/0/part-2.parquet", "a=1/.part-0.parquet.crc", "_SUCCESS",
                ".hidden/part-3.parquet"):
        (plain / rel).parent.mkdir(parents=True, exist_ok=True)
        (plain / rel).write_text("")
    assert [(p.relative_to(plain).as_posix(), v) for p, v in table_files(f"file://{plain}", ["A", "b"])] == [
        ("a=1/b=x%20y/part-0.parquet", {"A": "1", "b": "x y"}),
        ("a=__HIVE_DEFAULT_PARTITION__/b=z/part-1.parquet", {"A": None, "b": "z"})]

    sunk = tmp_path / "sunk"
    (sunk / "_spark_metadata").mkdir(parents=True)
    for name in ("part-0.parquet", "part-1.parquet"):  # part-1: a batch that never committed
        (sunk / name).write_text("")
    (sunk / "_spark_metadata" / "0").write_text(
        "v1\n" + json.dumps({"path": f"file://{sunk}/part-0.parquet", "action": "add"}) + "\n")
    assert [p.name for p, _ in table_files(str(sunk))] == ["part-0.parquet"]
    assert table_files(str(tmp_path / "missing")) == []


def test_file_tables_of_every_format_with_typed_partition_columns(tmp_path):
    declared = schema(id=LongType(), name=StringType(), floor=IntegerType())
    pq.write_table(pa.table({"ID": pa.array([1, 2], pa.int32()), "name": ["a", None]}),
                   (tmp_path / "p").mkdir() or tmp_path / "p" / "x.parquet")
    assert rows(read_file_table(str(tmp_path / "p"), "parquet", declared)) == [
        {"id": 1, "name": "a", "floor": None}, {"id": 2, "name": None, "floor": None}]

    (tmp_path / "c" / "floor=3").mkdir(parents=True)
    (tmp_path / "c" / "floor=3" / "x.csv").write_text('id,name\n1,"a,b"\n2,\n3,""\n')
    assert rows(read_file_table(str(tmp_path / "c"), "csv", declared, header=True,
                                partitioned_by=["floor"])) == [
        {"id": 1, "name": "a,b", "floor": 3}, {"id": 2, "name": None, "floor": 3},
        {"id": 3, "name": "", "floor": 3}]

    (tmp_path / "j").mkdir()
    (tmp_path / "j" / "x.json").write_text(
        '{"Id": 1, "name": "a", "tags": [1], "raw": "eHk=", "ok": true, "more": 0}\n\n'
        '{"id": 2, "at": "2024-01-02T03:04:05.123Z", "d": "12.345"}\n')
    got = rows(read_file_table(str(tmp_path / "j"), "json", schema(
        id=LongType(), tags=ArrayType(IntegerType()), raw=BinaryType(), ok=BooleanType(),
        at=TimestampType(), d=DecimalType(10, 2), day=DateType(),
        m=MapType(StringType(), IntegerType()))))
    assert got == [
        {"id": 1, "tags": [1], "raw": b"xy", "ok": True, "at": None, "d": None, "day": None, "m": None},
        {"id": 2, "tags": None, "raw": None, "ok": None,
         "at": dt.datetime(2024, 1, 2, 3, 4, 5, 123000, tzinfo=UTC),
         "d": decimal.Decimal("12.35"), "day": None, "m": None}]


def test_read_tasks_share_the_files_without_overlap(tmp_path):
    for i in range(20):
        pq.write_table(pa.table({"id": [i]}), tmp_path / f"part-{i}.parquet")
    declared = schema(id=LongType())
    shares = [sorted(r["id"] for r in rows(read_file_table(str(tmp_path), "parquet", declared,
                                                            part=p, parts=3))) for p in range(3)]
    assert sorted(i for share in shares for i in share) == list(range(20))
    assert all(shares)


def test_unreadable_file_names_the_file(tmp_path):
    (tmp_path / "bad.json").write_text('{"id": 1}\nnot json\n')
    with pytest.raises(ConnectorError, match=r"bad.json line 2: not JSON"):
        list(read_file_table(str(tmp_path), "json", schema(id=LongType())))
    (tmp_path / "bad.json").unlink()
    (tmp_path / "bad.parquet").write_text("not parquet")
    with pytest.raises(ConnectorError, match=r"cannot read file .*bad.parquet as parquet"):
        list(read_file_table(str(tmp_path), "parquet", schema(id=LongType())))
