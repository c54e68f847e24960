"""The connector contracts (issue 29 item 1): each stream kind answers for itself through
:func:`streamjob.connectors.sources.stream_source` (reader, EXPLAIN's description, idle
rule, committers, data sources), each sink through ``TableSink.describe()``, and no
module outside ``connectors/`` asks "which kind is this?" with ``isinstance`` on a spec
type."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from streamjob.connectors import spec as cspec
from streamjob.connectors.kafka import options as opt
from streamjob.connectors.kafka.dead_letter import DeadLetterTarget
from streamjob.connectors.sinks import table_sink
from streamjob.connectors.sources import group_committers, stream_source
from streamjob.exceptions import ValidationError

pytestmark = pytest.mark.unit

PACKAGE = Path(__file__).resolve().parents[2] / "streamjob"
KAFKA = cspec.KafkaSourceSpec("t", "127.0.0.1:9092", "json", ",", "earliest",
                              request_timeout_ms=5000)


def test_no_isinstance_on_a_spec_type_outside_connectors():
    pattern = re.compile(r"isinstance\([^)]*Spec")
    found = [f"{f.relative_to(PACKAGE.parent)}:{n}" for f in PACKAGE.rglob("*.py")
             if "connectors" not in f.relative_to(PACKAGE).parts[:1]
             for n, line in enumerate(f.read_text().splitlines(), 1) if pattern.search(line)]
    assert found == []


COLUMNS = [{"name": "a", "type": "int"}]


def test_kafka_reader_options_are_read_back_by_the_kafka_reader():
    from pyspark.sql.types import StructType

    from streamjob.connectors.kafka.source import KafkaStreamReader

    spec = cspec.KafkaSourceSpec("t", "b:9092", "delimited", "|", "latest",
                                 fail_on_data_loss=False, malformed="skip",
                                 isolation="read_committed", missing_columns="fail",
                                 request_timeout_ms=4000)
    dead = DeadLetterTarget("sqlite://", "dl", ({"name": "error", "type": "string"},), (), "d.s")
    how = stream_source(spec).reader(COLUMNS, start="1700000000000", max_records=7,
                                     group_id="g", dead_letter=dead)
    assert how.format == "streamjob_kafka" and how.json_columns is None
    assert how.schema == "`a` int, `__sj_malformed` STRING"
    assert how.malformed == "__sj_malformed"  # counted and dropped by the Spark room
    assert "b:9092" not in repr(how)  # options (secrets resolved) are left out of repr
    assert set(how.options) >= {opt.TOPIC, opt.BOOTSTRAP, opt.GROUP_ID, opt.DEAD_LETTER}
    reader = KafkaStreamReader(StructType(), {k.lower(): v for k, v in how.options.items()})
    assert (reader.topic, reader.bootstrap, reader.format, reader.delimiter) == \
        ("t", "b:9092", "delimited", "|")
    assert (reader.group_id, reader.fail_on_data_loss, reader.isolation) == \
        ("g", False, "read_committed")
    assert (reader.max_records, reader.request_timeout_ms, reader.fail_missing) == (7, 4000, True)
    assert DeadLetterTarget.from_option(reader.dead_letter) == dead


def test_the_kafka_data_source_is_registered_under_the_name_its_readers_use():
    from streamjob.connectors.kafka import options, source, stream

    assert source.KafkaDataSource.name() == options.SOURCE_NAME
    assert stream_source(KAFKA).data_sources == {options.SOURCE_NAME}
    # one name, one place: the data source and the stream kind spell it nowhere else
    assert "SOURCE_NAME" not in vars(source) and "SOURCE_NAME" not in vars(stream)


def test_kafka_source_answers_for_kafka():
    source = stream_source(KAFKA)
    assert source.identifier == "kafka" and source.bounded and source.starts_anywhere
    assert source.data_sources == {"streamjob_kafka"} and source.offsets_key == ("127.0.0.1:9092", "t")
    assert not source.tolerant and source.malformed_policy("d.dl") == "fail -> d.dl"
    assert source.consumer_group("streamjob.d.j") == "streamjob.d.j"
    assert source.kafka_topic() == cspec.KafkaTopic("t", "127.0.0.1:9092", KAFKA.security, 5000)
    assert source.reach().broker == ("127.0.0.1:9092", KAFKA.security)
    assert source.preview("latest", "d.s") == (cspec.KafkaSourceSpec(
        "t", "127.0.0.1:9092", "json", ",", "latest", request_timeout_ms=5000), None)
    with pytest.raises(ValidationError, match="committed"):
        source.preview("committed", "d.s")


def test_kafka_source_describes_where_the_next_start_reads():
    source = stream_source(KAFKA)
    base = dict(group_id="g", dead_letter_table=None)
    fresh = source.describe(**base, checkpointed=True, offsets={}, checkpoint_id=None)
    assert fresh["starts_from"].startswith("its reset strategy (earliest): no checkpoint yet")
    assert fresh["location"] == "topic t at 127.0.0.1:9092" and fresh["consumer_group"] == "g"
    resumed = source.describe(**base, checkpointed=True, offsets={"t": {"1": 5, "0": 3}},
                              checkpoint_id="c7")
    assert resumed["starting_offsets"] == {"0": 3, "1": 5} and resumed["partitions"] == [0, 1]
    assert "checkpoint c7" in resumed["starts_from"]
    bare = source.describe(**base, checkpointed=False, offsets={}, checkpoint_id=None)
    assert "at every start" in bare["starts_from"]


def test_file_source_answers_for_files(tmp_path):
    (tmp_path / "a.json").write_text("{}\n")
    (tmp_path / "_tmp").write_text("")
    (tmp_path / ".hidden").write_text("")
    json_source = stream_source(cspec.FileSourceSpec(str(tmp_path), "json"))
    how = json_source.reader(COLUMNS, start=None, max_records=0, group_id=None)
    assert (how.format, how.options, how.schema, how.json_columns, how.json_schema) == \
        ("text", {"path": str(tmp_path)}, None, ("a",), "`a` int")
    csv = stream_source(cspec.FileSourceSpec(str(tmp_path), "csv")).reader(
        COLUMNS, start=None, max_records=0, group_id=None)
    assert (csv.format, csv.schema, csv.json_columns) == ("csv", "`a` int", None)
    assert json_source.present_files() == {str((tmp_path / "a.json").resolve())}
    assert not json_source.starts_anywhere and json_source.bounded
    assert json_source.end_offsets() == {} and json_source.commit_target("g") is None
    assert json_source.data_sources == frozenset() and json_source.kafka_topic() is None
    assert json_source.describe(group_id=None, dead_letter_table=None, checkpointed=True,
                                offsets={}, checkpoint_id=None) == {
        "connector": "files", "location": str(tmp_path), "format": "json",
        "starts_from": "files not yet listed in its checkpoint"}
    assert json_source.reach().paths == ((str(tmp_path), '"path"', "path"),)


def test_rate_source_answers_for_rate():
    source = stream_source(cspec.RateSourceSpec(5))
    how = source.reader([{"name": "timestamp", "type": "timestamp"}], start=None,
                        max_records=0, group_id=None)
    assert (how.format, how.options, how.schema) == ("rate", {"rowsPerSecond": "5"}, None)
    assert not source.bounded and not source.observes_columns
    assert source.fixed_columns == {"timestamp", "value"}
    assert source.describe(group_id=None, dead_letter_table=None, checkpointed=True,
                           offsets={}, checkpoint_id=None)["location"] == "5 rows per second"


def test_committers_one_per_broker_and_group():
    other = cspec.KafkaSourceSpec("u", "127.0.0.1:9092", "json", ",", "earliest")
    committers = group_committers([(stream_source(KAFKA), "g"), (stream_source(other), "g"),
                                   (stream_source(KAFKA), None),
                                   (stream_source(cspec.RateSourceSpec(1)), "g")])
    assert len(committers) == 1


def test_a_spec_of_no_stream_kind_is_refused():
    with pytest.raises(ValidationError):
        stream_source(cspec.ConsoleTableSpec())


def _table(name: str = "d.t", columns=({"name": "k", "type": "int"},)):
    return SimpleNamespace(qualified_name=name, columns=[dict(c) for c in columns])


@pytest.mark.parametrize("spec, update, connector, location, write, upsert", [
    (cspec.SqlTableSpec("postgresql://u:secret@h/db", "t", ("k",)), True, "sql",
     "table t at postgresql://u:***@h/db", "upsert on primary key (k)", True),
    (cspec.SqlTableSpec("sqlite:///x.db", "t", ()), True, "sql", "table t at sqlite:///x.db",
     "insert", False),
    (cspec.KafkaTableSpec("o", "b:9092", key="k"), False, "kafka", "topic o at b:9092",
     "produce (key k)", False),
    (cspec.KafkaTableSpec("o", "b:9092", primary_key=("k",)), True, "kafka",
     "topic o at b:9092", "produce keyed by primary key (k): the latest record per key is "
     "the row", True),
    (cspec.FileTableSpec("parquet", "/w/t", False, ("k",)), False, "files (parquet)", "/w/t",
     "append files partitioned by k", False),
    (cspec.ConsoleTableSpec(), True, "console", None, "print", False),
    (cspec.DeltaTableSpec("/w/d", ("k",)), False, "delta", "/w/d",
     "append (one Delta commit per micro-batch) partitioned by k", False),
])
def test_each_sink_describes_itself(spec, update, connector, location, write, upsert):
    described = table_sink(_table(), spec, marker="", job="d.j", exactly_once=True,
                           upsert=update).describe()
    assert (described["connector"], described["location"], described["write"],
            described["upsert"]) == (connector, location, write, upsert)
    assert described["commit"]


def test_table_specs_answer_for_their_kind():
    files = cspec.FileTableSpec("csv", "/w/t", True)
    sql = cspec.SqlTableSpec("sqlite://", "t", ("k",))
    kafka = cspec.KafkaTableSpec("o", "b:9092")
    console = cspec.ConsoleTableSpec()
    assert [s.on_files for s in (files, sql, kafka, console)] == [True, False, False, False]
    assert [s.static_readable for s in (files, sql, kafka, console)] == [True, True, False, False]
    assert [s.updates_in_place for s in (files, sql, kafka, console)] == [False, True, False, True]
    assert kafka.kafka_topic() == cspec.KafkaTopic("o", "b:9092", kafka.security)
    assert files.reach().paths == (("/w/t", "LOCATION", "location"),)
    assert sql.reach().urls == (("sqlite://", '"url"'),)
    with pytest.raises(ValidationError) as err:
        sql.check_columns([{"name": "v", "type": "int"}], "d.t")
    assert err.value.key == "primary.key"


@pytest.mark.parametrize("props, scope", [
    ({}, "kafka stream"), ({"SOURCE": "Files"}, "file stream"), ({"source": "rate"}, "rate stream"),
    ({"source": "hdfs"}, None)])
def test_stream_scope(props, scope):
    assert cspec.stream_scope(props) == scope


@pytest.mark.parametrize("props, scope", [
    ({}, "file table"), ({"topic": "t"}, "kafka table"), ({"connector": "SQL"}, "sql table"),
    ({"connector": "console"}, "console table"), ({"connector": "hbase"}, None)])
def test_table_scope(props, scope):
    assert cspec.table_scope(props) == scope
