"""Kafka table spec and record encoding, without a broker.

The encoder's contract is that a Kafka stream with the same columns and format reads its
records back: every round trip here goes through the stream decoder
(:func:`streamjob.connectors.kafka.formats.decode`)."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pyarrow as pa
import pytest

from streamjob import columntypes as sjtypes
from streamjob.connectors import spec as cspec
from streamjob.connectors.kafka.formats import RecordSlice, decode
from streamjob.connectors.kafka.sink import KafkaSink, assign_partitions, encode_records
from streamjob.exceptions import ConnectorError, PropertyError, ValidationError

from . import planning

pytestmark = pytest.mark.unit

UTC = dt.timezone.utc
COLUMNS = [{"name": "id", "type": "bigint"}, {"name": "name", "type": "string"},
           {"name": "price", "type": "decimal(20,6)"}, {"name": "ratio", "type": "double"},
           {"name": "ok", "type": "boolean"}, {"name": "at", "type": "timestamp"},
           {"name": "day", "type": "date"}, {"name": "small", "type": "int"}]
ROWS = [
    {"id": 1, "name": "ann", "price": Decimal("12345678901234.123456"), "ratio": 0.1,
     "ok": True, "at": dt.datetime(2024, 1, 1, 0, 0, 1, 500000, tzinfo=UTC),
     "day": dt.date(2024, 1, 2), "small": -7},
    {"id": 2, "name": None, "price": None, "ratio": float("nan"), "ok": None, "at": None,
     "day": None, "small": None},
    {"id": 3, "name": "", "price": Decimal("-0.000001"), "ratio": float("-inf"), "ok": False,
     "at": dt.datetime(1999, 12, 31, 23, 59, 59, tzinfo=UTC), "day": dt.date(1999, 12, 31),
     "small": 0},
    {"id": 4, "name": "naïve \"quoted\"\nline", "price": Decimal("0"), "ratio": 1e300,
     "ok": True, "at": dt.datetime(2024, 6, 1, 12, 0, tzinfo=UTC), "day": dt.date(2024, 6, 1),
     "small": 2147483647},
]


def _table(rows=ROWS, columns=COLUMNS) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=sjtypes.arrow_schema(columns))


def _decode(values, fmt, delimiter=",", columns=COLUMNS) -> list[dict]:
    sl = RecordSlice("t", 0, list(range(len(values))), values, [None] * len(values),
                     [0] * len(values))
    return decode(sl, sjtypes.arrow_schema(columns), fmt, delimiter).to_pylist()


def _same(a: list[dict], b: list[dict]) -> None:
    """Row lists equal, NaN equal to NaN."""
    assert len(a) == len(b)
    for ra, rb in zip(a, b):
        for k in ra:
            x, y = ra[k], rb[k]
            if isinstance(x, float) and x != x:
                assert isinstance(y, float) and y != y, k
            else:
                assert x == y, (k, x, y)


# -- spec ----------------------------------------------------------------------------


def test_kafka_table_spec_defaults_and_properties():
    sp = cspec.table_spec("out", {"Topic": "t", "KAFKA.BROKER.LIST": "h:9092"}, None, None, "/x")
    assert sp == cspec.KafkaTableSpec("t", "h:9092", "json", ",", None)
    sp = cspec.table_spec("out", {"connector": "kafka", "topic": "t", "kafka.broker.list": "h:1",
                                  "format": "DELIMITED", "delimiter": "|", "key": "id"},
                          None, None, "/x")
    assert sp == cspec.KafkaTableSpec("t", "h:1", "delimited", "|", "id")


def test_kafka_table_needs_topic_and_broker():
    with pytest.raises(ValidationError, match=r'Kafka table \'out\' needs TBLPROPERTIES\("kafka.broker.list"=...\)'):
        cspec.table_spec("out", {"topic": "t"}, None, None, "/x")
    with pytest.raises(ValidationError, match=r'needs TBLPROPERTIES\("topic"=..., "kafka.broker.list"=...\)'):
        cspec.table_spec("out", {"connector": "kafka"}, None, None, "/x")


def test_kafka_table_refuses_raw_and_properties_of_other_connectors():
    with pytest.raises(ValidationError, match="format must be one of json, delimited, got 'raw'"):
        cspec.table_spec("out", {"topic": "t", "kafka.broker.list": "h:1", "format": "raw"},
                         None, None, "/x")
    with pytest.raises(PropertyError, match="url"):
        cspec.table_spec("out", {"topic": "t", "kafka.broker.list": "h:1", "url": "sqlite://"},
                         None, None, "/x")


def test_key_must_be_a_declared_column():
    sp = cspec.KafkaTableSpec("t", "h:1", key="nope")
    with pytest.raises(ValidationError, match=r"\"key\" 'nope' is not a column \(id, name"):
        cspec.check_kafka_key(sp, COLUMNS, "db.out")
    with pytest.raises(ValidationError, match="'nope' is not a column"):
        KafkaSink(sp, COLUMNS, "uid", "db.job", exactly_once=False)
    cspec.check_kafka_key(cspec.KafkaTableSpec("t", "h:1", key="NAME"), COLUMNS, "db.out")


def test_sink_ids_derive_from_the_job_uid():
    sink = KafkaSink(cspec.KafkaTableSpec("t", "h:1"), COLUMNS, "u-1", "db.job", True)
    assert sink.transactional_id == "streamjob-u-1"
    assert sink.marker_group == "streamjob-sink-u-1"


# -- JSON ----------------------------------------------------------------------------


def test_json_values_by_column_name_with_nulls_kept():
    keys, values = encode_records(_table(), COLUMNS, "json")
    assert keys == [None] * 4
    first, second = json.loads(values[0]), json.loads(values[1])
    assert list(first) == [c["name"] for c in COLUMNS]
    assert first == {"id": 1, "name": "ann", "price": "12345678901234.123456", "ratio": 0.1,
                     "ok": True, "at": "2024-01-01T00:00:01.500000Z", "day": "2024-01-02",
                     "small": -7}
    assert second == {"id": 2, "name": None, "price": None, "ratio": "NaN", "ok": None,
                      "at": None, "day": None, "small": None}
    assert json.loads(values[2])["ratio"] == "-Infinity"
    assert all(b"\n" not in v for v in values)  # one line per record (fast decode path)


def test_json_round_trips_through_the_stream_decoder():
    _, values = encode_records(_table(), COLUMNS, "json")
    _same(_decode(values, "json"), ROWS)


def test_json_timestamps_are_utc_whatever_the_arrow_zone():
    t = pa.table({"at": pa.array([dt.datetime(2024, 1, 1, 1, 0)], pa.timestamp("us", tz="Europe/Paris"))})
    _, values = encode_records(t, [{"name": "at", "type": "timestamp"}], "json")
    assert json.loads(values[0]) == {"at": "2024-01-01T01:00:00Z"}  # Arrow stores UTC
    naive = pa.table({"at": pa.array([dt.datetime(2024, 1, 1, 1, 0)], pa.timestamp("us"))})
    _, values = encode_records(naive, [{"name": "at", "type": "timestamp_ntz"}], "json")
    assert json.loads(values[0]) == {"at": "2024-01-01T01:00:00"}


def test_json_nested_values_and_missing_columns():
    cols = [{"name": "tags", "type": "array<string>"}, {"name": "m", "type": "map<string,double>"},
            {"name": "s", "type": "struct<a:int,b:decimal(4,2)>"}, {"name": "absent", "type": "int"}]
    t = pa.table({
        "TAGS": pa.array([["a", None]]),
        "m": pa.array([[("x", float("inf"))]], pa.map_(pa.string(), pa.float64())),
        "s": pa.array([{"a": 1, "b": Decimal("1.50")}],
                      pa.struct([("a", pa.int32()), ("b", pa.decimal128(4, 2))])),
    })
    _, values = encode_records(t, cols, "json")
    assert json.loads(values[0]) == {"tags": ["a", None], "m": {"x": "Infinity"},
                                     "s": {"a": 1, "b": "1.50"}, "absent": None}


# -- delimited -----------------------------------------------------------------------


def test_delimited_values_hive_style():
    rows = [r for r in ROWS if r["id"] != 4]  # row 4 holds a newline: see the next test
    _, values = encode_records(_table(rows), COLUMNS, "delimited")
    assert values[0] == b"1,ann,12345678901234.123456,0.1,true,2024-01-01 00:00:01.500000,2024-01-02,-7"
    assert values[1] == b"2,\\N,\\N,NaN,\\N,\\N,\\N,\\N"
    assert values[2] == b"3,,-0.000001,-Infinity,false,1999-12-31 23:59:59,1999-12-31,0"
    _same(_decode(values, "delimited"), rows)


def test_delimited_round_trips_with_control_character_and_newlines():
    _, values = encode_records(_table(), COLUMNS, "delimited", "\x01")
    assert values[0].count(b"\x01") == len(COLUMNS) - 1
    _same(_decode(values, "delimited", "\x01"), ROWS)


def test_delimited_value_holding_the_delimiter_is_an_error():
    t = _table([dict(ROWS[0], name="a,b")])
    with pytest.raises(ConnectorError, match=r"column 'name' of row 1 .* holds the delimiter ','"):
        encode_records(t, COLUMNS, "delimited")
    encode_records(t, COLUMNS, "delimited", "|")


# -- keys and partitions -------------------------------------------------------------


def test_key_is_the_columns_text_and_null_gives_no_key():
    keys, _ = encode_records(_table(), COLUMNS, "json", key="name")
    assert keys == [b"ann", None, b"", "naïve \"quoted\"\nline".encode()]
    keys, _ = encode_records(_table(), COLUMNS, "json", key="AT")
    assert keys[0] == b"2024-01-01 00:00:01.500000" and keys[1] is None
    keys, _ = encode_records(_table(), COLUMNS, "delimited", key="price")
    assert keys[0] == b"12345678901234.123456"


def test_partitions_follow_kafkas_default_partitioner():
    from kafka.partitioner.default import murmur2

    keys = [f"k{i}".encode() for i in range(50)]
    parts = assign_partitions(keys, {2, 0, 1})
    assert parts == [(murmur2(k) & 0x7FFFFFFF) % 3 for k in keys]
    assert assign_partitions([b"same"] * 3, [0, 1, 2, 3]) == [(murmur2(b"same") & 0x7FFFFFFF) % 4] * 3
    # murmur2 vectors of the Java client (Utils.murmur2), so keys meet those of Java producers
    for key, java in ((b"21", -973932308), (b"foobar", -790332482)):
        assert murmur2(key) == java & 0xFFFFFFFF


def test_records_without_key_spread_in_contiguous_runs():
    assert assign_partitions([None] * 6, [0, 1]) == [0, 0, 0, 1, 1, 1]
    assert assign_partitions([None] * 2, [0, 1, 2]) == [0, 1]
    with pytest.raises(ConnectorError, match="no partitions"):
        assign_partitions([None], [])


# -- upsert keys ("primary.key") -----------------------------------------------------


def test_primary_key_of_a_kafka_table_is_parsed_in_order_lower_cased_once():
    sp = cspec.table_spec("out", {"topic": "t", "kafka.broker.list": "h:1",
                                  "Primary.Key": " Name , id,name"}, None, None, "/x")
    assert sp.primary_key == ("name", "id") and sp.key is None


def test_primary_key_columns_must_be_declared_and_key_may_only_name_the_single_one():
    def check(**kw):
        cspec.check_kafka_key(cspec.KafkaTableSpec("t", "h:1", **kw), COLUMNS, "db.out")

    with pytest.raises(ValidationError, match=r"primary key column 'nope' is not a column \(id") as e:
        check(primary_key=("id", "nope"))
    assert (e.value.key, e.value.text) == ("primary.key", "nope")
    with pytest.raises(ValidationError, match="may only name the primary key's single column") as e:
        check(key="id", primary_key=("id", "name"))
    assert e.value.key == "key"
    with pytest.raises(ValidationError, match="may only name"):
        check(key="name", primary_key=("id",))
    check(key="ID", primary_key=("id",))


def test_json_upsert_key_is_an_object_of_the_key_columns_in_key_order():
    keys, values = encode_records(_table(), COLUMNS, "json", primary_key=("name", "id"))
    assert keys[0] == b'{"name":"ann","id":1}'
    assert keys[1] == b'{"name":null,"id":2}'  # NULL kept: every record has a key
    assert values == encode_records(_table(), COLUMNS, "json")[1]  # the value is the row
    key_cols = [COLUMNS[1], COLUMNS[0]]  # a Kafka stream of the key columns reads it back
    assert _decode(keys, "json", columns=key_cols) == [
        {"name": r["name"], "id": r["id"]} for r in ROWS]
    keys, _ = encode_records(_table(), COLUMNS, "json", primary_key=("at",))
    assert keys[:2] == [b'{"at":"2024-01-01T00:00:01.500000Z"}', b'{"at":null}']


def test_delimited_upsert_key_is_the_key_fields_joined():
    rows = [r for r in ROWS if r["id"] != 4]
    keys, _ = encode_records(_table(rows), COLUMNS, "delimited", "|", primary_key=("id", "name"))
    assert keys == [b"1|ann", b"2|\\N", b"3|"]
    keys, _ = encode_records(_table(rows), COLUMNS, "delimited", "|", primary_key=("price",))
    assert keys == [b"12345678901234.123456", b"\\N", b"-0.000001"]


def test_raw_upsert_key_is_the_columns_text_and_null_fails_the_batch():
    keys, _ = encode_records(_table(ROWS[:1]), COLUMNS, "json", key="name", primary_key=("name",))
    assert keys == [b"ann"]
    with pytest.raises(ConnectorError, match=r"primary key column 'name' is NULL in row 2"):
        encode_records(_table(), COLUMNS, "json", key="name", primary_key=("name",))


# -- planning (catalog, no Spark, no broker) ------------------------------------------

PLAN_SETUP = """
CREATE STREAM s (id BIGINT, name STRING)
  TBLPROPERTIES("topic"="in", "kafka.broker.list"="127.0.0.1:1");
CREATE TABLE k (id BIGINT, name STRING)
  TBLPROPERTIES("topic"="out", "kafka.broker.list"="127.0.0.1:1", "key"="name");
"""


@pytest.fixture
def planner(tmp_path):
    yield from planning.executor(tmp_path, PLAN_SETUP)


def test_a_job_into_a_kafka_table_plans_append_exactly_once(planner):
    p = planning.plan(planner, 'CREATE STREAMJOB j AS ("', "insert into k select id, name from s")
    assert p.sink_spec == cspec.KafkaTableSpec("out", "127.0.0.1:1", "json", ",", "name")
    assert (p.output_mode, p.guarantee) == ("append", "exactly-once")


def test_a_kafka_table_key_that_is_no_column_is_refused_at_create_table(planner):
    from streamjob.grammar import parse_script

    sql = ('CREATE TABLE bad_key (id BIGINT, name STRING)\n  TBLPROPERTIES("connector"="kafka", '
           '"topic"="out", "kafka.broker.list"="127.0.0.1:1", "key"="nope");')
    with pytest.raises(ValidationError) as err:
        for stmt in parse_script(sql):
            planner.execute(stmt)
    assert "\"key\" 'nope' is not a column (id, name)" in str(err.value)
    assert (err.value.line, err.value.column) == (2, sql.splitlines()[1].index('"nope"') + 1)


def test_an_aggregation_into_a_kafka_table_needs_a_window(planner):
    err = planning.error(planner, 'CREATE STREAMJOB j AS ("', "insert into k select count(*), name from s group by name")
    assert "aggregate over a window" in str(err)


def test_show_tables_names_a_kafka_table_declared_by_its_topic(planner):
    from streamjob.grammar import parse_script

    shown = [planner.execute(s) for s in parse_script("SHOW TABLES;")][0].to_json()
    assert {r["table"]: r["connector"] for r in shown}["k"] == "kafka"


def test_an_aggregation_into_a_kafka_table_with_a_primary_key_plans_update(planner):
    from streamjob.grammar import parse_script
    from streamjob.planner.explain import explain, guarantee_reason

    for stmt in parse_script('CREATE TABLE ku (name STRING, n BIGINT) TBLPROPERTIES('
                             '"topic"="out", "kafka.broker.list"="127.0.0.1:1", '
                             '"primary.key"="name");'):
        planner.execute(stmt)
    p = planning.plan(planner, 'CREATE STREAMJOB j AS ("',
                      "insert into ku select name, count(*) from s group by name")
    assert p.sink_spec.primary_key == ("name",)
    assert (p.output_mode, p.guarantee) == ("update", "exactly-once")
    assert "replayed batch is skipped" in guarantee_reason(p, {})
    sink = explain(p)["sink"]
    assert sink["write"].startswith("produce keyed by primary key (name)")
    assert "the latest record per key stays right" in sink["rows_visible"]
    from streamjob.planner.plan import plan_job

    p = plan_job(planner.catalog, planner.home, "default", "j",
                 "insert into ku select name, count(*) from s group by name",
                 {"morphling.result.auto.flush": "true"})
    assert p.guarantee == "at-least-once"
    assert "the upsert on the primary key makes a repeat harmless" in guarantee_reason(p, {})


def test_a_kafka_primary_key_that_is_no_column_is_refused_at_create_table(planner):
    from streamjob.grammar import parse_script

    sql = ('CREATE TABLE bad_pk (id BIGINT, name STRING)\n  TBLPROPERTIES("connector"="kafka", '
           '"topic"="out", "kafka.broker.list"="127.0.0.1:1", "primary.key"="id,nope");')
    with pytest.raises(ValidationError) as err:
        for stmt in parse_script(sql):
            planner.execute(stmt)
    assert "primary key column 'nope' is not a column (id, name)" in str(err.value)
    assert err.value.line == 2
