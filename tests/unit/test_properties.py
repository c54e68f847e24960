import pytest

from streamjob import properties as jp
from streamjob.exceptions import PropertyError

pytestmark = pytest.mark.unit


def test_values_parse_as_users_write_them():
    v = jp.values({"morphling.job.enable.checkpoint": "TRUE",
                   "morphling.job.checkpoint.interval": " 60000 ",
                   "morphling.checkpoint.backend": "ZooKeeper"})
    assert v["morphling.job.enable.checkpoint"] is True
    assert v["morphling.job.checkpoint.interval"] == 60000
    assert v["morphling.checkpoint.backend"] == "zookeeper"


def test_unknown_property_suggests_nearest():
    with pytest.raises(PropertyError, match="did you mean 'morphling.job.checkpoint.interval'"):
        jp.validate({"morphling.job.checkpoint.intervall": "1000"})


def test_wrong_type_and_range_name_property_value_and_rule():
    with pytest.raises(PropertyError, match=r"'morphling.job.checkpoint.interval' must be a duration "
                       r"in ms, or with a unit such as '60 s' or '1 min', got 'soon'"):
        jp.validate({"morphling.job.checkpoint.interval": "soon"})
    with pytest.raises(PropertyError, match=r"must be between 0 and 10000, -1 \(never restart\), got '-2'"):
        jp.validate({"morphling.task.max.failures": "-2"})
    with pytest.raises(PropertyError, match="true or false, got 'yes'"):
        jp.validate({"morphling.result.auto.flush": "yes"})
    assert jp.validate({"morphling.task.max.failures": "-1"}) == {"morphling.task.max.failures": "-1"}


def test_layering_and_origin():
    eff = jp.effective({"morphling.checkpoint.retained": "3"},
                       {"morphling.checkpoint.retained": "7", "morphling.result.auto.flush": "true"})
    assert eff["morphling.checkpoint.retained"] == jp.Effective(3, "JOBPROPERTIES")
    assert eff["morphling.result.auto.flush"] == jp.Effective(True, "SET")
    assert eff["morphling.job.checkpoint.interval"] == jp.Effective(60000, "default")  # DESIGN §3


@pytest.mark.parametrize("props,expected", [
    ({}, "exactly-once"),
    ({"morphling.result.auto.flush": "true"}, "at-least-once"),
    ({"morphling.job.enable.checkpoint": "false"}, "none"),
])
def test_guarantee(props, expected):
    assert jp.guarantee(jp.values(props)) == expected


def test_durations_take_units():
    v = jp.values({"morphling.job.checkpoint.interval": "2 s", "morphling.checkpoint.timeout": "1min"})
    assert v["morphling.job.checkpoint.interval"] == 2000
    assert v["morphling.checkpoint.timeout"] == 60000
    with pytest.raises(PropertyError, match="got '5 fortnights'"):
        jp.validate({"morphling.checkpoint.timeout": "5 fortnights"})
    with pytest.raises(PropertyError, match="must be between 1 and 10000, got '10001'"):
        jp.validate({"morphling.checkpoint.retained": "10001"})


def test_spark_sql_settings_pass_through_with_origin():
    props = jp.validate({"Spark.SQL.shuffle.partitions": "2"})
    assert props == {"spark.sql.shuffle.partitions": "2"}
    eff = jp.effective(props, {"spark.sql.ansi.enabled": "true"})
    assert eff["spark.sql.shuffle.partitions"] == jp.Effective("2", "JOBPROPERTIES")
    assert jp.spark_settings(jp.values(props)) == {"spark.sql.shuffle.partitions": "2"}
    with pytest.raises(PropertyError, match="unknown job property 'spark.master'"):
        jp.validate({"spark.master": "local"})


def test_connector_properties_are_checked_per_connector():
    typed = jp.validate_connector("rate stream", {"source": "rate", "rows.per.second": "10"},
                                  "rate stream 'r'")
    assert typed["rows.per.second"] == 10
    with pytest.raises(PropertyError, match="Kafka stream 's': unknown property 'topc'; did you mean 'topic'"):
        jp.validate_connector("kafka stream", {"topc": "t"}, "Kafka stream 's'")
    with pytest.raises(PropertyError, match="unknown property 'primary.key'; it belongs to a sql table"):
        jp.validate_connector("file table", {"primary.key": "a"}, "file table 't'")
    with pytest.raises(PropertyError, match="'watermark.delay' must be a Spark interval"):
        jp.validate_connector("kafka stream", {"watermark.delay": "soon"}, "Kafka stream 's'")
    assert jp.validate_connector("kafka stream", {"watermark.delay": "1 minute 30 seconds"}, "s")


def test_engine_properties():
    jp.validate_engine({"spark.master": "local[2]", "spark.executor.memory": "1g",
                        "spark.morphling.zookeeper.quorum": "127.0.0.1:2181"})
    with pytest.raises(PropertyError, match="did you mean 'spark.morphling.zookeeper.quorum'"):
        jp.validate_engine({"spark.morphling.zookeeper.qourum": "x"})
    with pytest.raises(PropertyError, match="engine properties are spark.\\* or streamjob.\\*"):
        jp.validate_engine({"master": "local"})


def test_secrets_are_masked():
    assert jp.mask("url", "postgresql://u:pw@h/db") == "postgresql://u:***@h/db"
    assert jp.mask("sasl.password", "pw") == "******"
    assert jp.mask("topic", "t") == "t"


def test_docs_property_reference_is_generated_from_the_registry():
    from pathlib import Path

    from streamjob.properties.__main__ import render

    doc = Path(__file__).parent.parent.parent / "docs" / "properties.md"
    assert doc.read_text() == render(), "run: python -m streamjob.properties > docs/properties.md"


def test_connector_reference_tables_are_generated_from_the_registry():
    from pathlib import Path

    from streamjob.properties.__main__ import render_connectors

    doc = Path(__file__).parent.parent.parent / "docs" / "connectors.md"
    text = doc.read_text()
    from streamjob.properties import CONNECTOR

    scopes = {scope for prop in CONNECTOR for scope in prop.scopes}
    assert all(f"<!-- properties: {scope} -->" in text for scope in scopes), scopes
    assert text == render_connectors(text), \
        "run: python -m streamjob.properties --connectors docs/connectors.md"


def test_job_properties_are_one_typed_object_built_from_the_registry():
    """Issue 14: every job property of the registry is one typed attribute, read by name
    too; spark.sql.* settings pass through; the epoch's start position is set apart."""
    from streamjob import properties as jp
    from streamjob.properties.job import NAMES, START_POSITION, attributes

    assert attributes() == set(NAMES)
    assert set(NAMES.values()) == {p.name for p in jp.JOB if not (p.maps_to or p.ignored)}
    props = jp.values({"morphling.job.checkpoint.interval": "1 min",
                       "spark.sql.shuffle.partitions": "4"},
                      {"morphling.result.auto.flush": "true"})
    assert props.checkpoint_interval_ms == 60_000 and props.auto_flush is True
    assert props["morphling.job.checkpoint.interval"] == 60_000
    assert props.spark == {"spark.sql.shuffle.partitions": "4"}
    assert jp.spark_settings(props) == {"spark.sql.shuffle.partitions": "4"}
    assert jp.guarantee(props) == "at-least-once"
    started = props.starting_at("earliest")
    assert started.start_position == "earliest" and started[START_POSITION] == "earliest"
    assert START_POSITION not in props


def test_failover_backoff_doubles_from_its_initial_value_up_to_its_maximum():
    """Flink's exponential-delay restart strategy: 2 s, 4 s, 8 s ... 30 s by default;
    both ends are job properties (a test or a latency-sensitive job restarts sooner)."""
    default = jp.values({})
    assert [default.backoff_s(n) for n in (1, 2, 3, 4, 5, 6)] == [2, 4, 8, 16, 30, 30]
    quick = jp.values({"streamjob.failover.initial.backoff": "100 ms",
                       "streamjob.failover.max.backoff": "1 s"})
    assert [quick.backoff_s(n) for n in (1, 2, 3, 4, 5)] == [0.1, 0.2, 0.4, 0.8, 1.0]
    with pytest.raises(PropertyError, match="did you mean 'streamjob.failover.initial.backoff'"):
        jp.validate({"streamjob.failover.initial.backof": "1"})


# Slipstream 5.2.2's property catalogue: slipstream_confdesc.properties of
# github.com/transwarpio/application-metainfo (SLIPSTREAM/transwarp-5.2.2-final/templates/
# slipstreamstudio/), all 18 of its names.
CONFDESC_522 = [
    "streamsql.use.eventtime", "stream.id", "streamsql.max.running.sql",
    "streamsql.max.running.task", "morphling.maxlag.on.disorder",
    "morphling.infinitewindow.reduce.tasks", "morphling.result.auto.flush",
    "morphling.hdfs.flush.size", "morphling.hdfs.flush.interval.ms",
    "morphling.task.max.failures", "morphling.job.enable.checkpoint",
    "morphling.job.checkpoint.interval", "morphling.job.enable.auto.failover",
    "morphling.job.enable.wal.sink", "morphling.wal.sink.committer.type",
    "morphling.wal.sink.voltdb.jdbc.url", "morphling.metrics.enabled", "mapred.reduce.tasks",
]


def test_every_slipstream_property_is_known_with_its_origin_and_never_stops_a_script():
    """Issue 18: each of the 18 confdesc names (and stream.number.receivers from the docs)
    is accepted; its doc says where it comes from; one without effect gets a notice."""
    assert len(CONFDESC_522) == 18
    for name in CONFDESC_522 + ["stream.number.receivers", "streamsql.use.eventmode"]:
        prop = jp.lookup(name.upper())
        assert prop.slipstream.startswith(("Slipstream 5.2.2 confdesc: ", "Slipstream documentation")), name
        assert not (prop.maps_to and prop.ignored), name
    given = {"morphling.metrics.enabled": "true", "stream.id": "job1",
             "morphling.job.enable.wal.sink": "true", "morphling.hdfs.flush.size": "100000",
             "streamsql.max.running.sql": "-1", "morphling.maxlag.on.disorder": "-1"}
    assert set(jp.validate(given)) == set(given)
    notes = jp.notices(given)
    assert len(notes) == 5 and all(n.startswith("note: ") for n in notes)
    assert "note: morphling.metrics.enabled has no effect in streamjob: metrics are always" in notes[0]
    with pytest.raises(PropertyError, match="did you mean 'morphling.maxlag.on.disorder'"):
        jp.validate({"morphling.maxlag.on.disorde": "100"})


def test_slipstream_reduce_tasks_map_to_the_jobs_shuffle_partitions():
    """mapred.reduce.tasks sets spark.sql.shuffle.partitions as Spark's own SET does;
    it wins over morphling.infinitewindow.reduce.tasks; an explicit spark.sql setting
    wins over both; -1 leaves the engine's."""
    eff = jp.effective({"mapred.reduce.tasks": "3"}, {"morphling.infinitewindow.reduce.tasks": "5"})
    assert eff["spark.sql.shuffle.partitions"] == jp.Effective("3", "JOBPROPERTIES (mapred.reduce.tasks)")
    v = jp.values({"morphling.infinitewindow.reduce.tasks": "5"})
    assert jp.spark_settings(v) == {"spark.sql.shuffle.partitions": "5"}
    v = jp.values({"mapred.reduce.tasks": "3", "spark.sql.shuffle.partitions": "7"})
    assert jp.spark_settings(v) == {"spark.sql.shuffle.partitions": "7"}
    assert jp.spark_settings(jp.values({"mapred.reduce.tasks": "-1"})) == {}
    assert "mapred.reduce.tasks" not in jp.effective({})  # shown only when given


def test_slipstream_max_disorder_is_the_watermark_delay():
    assert jp.values({}).watermark_delay("1 hour") == "1 hour"
    assert jp.values({"morphling.maxlag.on.disorder": "5 s"}).watermark_delay("1 hour") == "5000 milliseconds"
    assert jp.values({"morphling.maxlag.on.disorder": "-1"}).watermark_delay("1 hour") == "0 milliseconds"
