"""Offsets of the Kafka source without a broker: the read-limit cap, offset parsing, the
reset strategy and lost-offsets rules, option checks, group ids and worker logging."""

import logging
import subprocess
import sys
import uuid

import pytest
from pyspark.sql.types import StringType, StructField, StructType

from streamjob.spark.listener import merge_offsets
from streamjob.connectors import worker
from streamjob.connectors.kafka.group import GroupCommitter, default_group_id
from streamjob.connectors.kafka.source import (KafkaStreamReader, _cap, lost_start,
                                               parse_offsets, reset_strategy)
from streamjob.exceptions import ConnectorError
from streamjob.manager.idle import reached

pytestmark = pytest.mark.unit


def test_cap_spreads_limit_over_backlog():
    start = {0: 0, 1: 100, 2: 50}
    ends = {0: 1000, 1: 100, 2: 1050}
    capped = _cap(start, ends, 100)
    assert capped == {0: 50, 1: 100, 2: 100}
    assert sum(capped[p] - start[p] for p in start) <= 100


def test_cap_no_limit_needed_and_tiny_limit_still_progresses():
    assert _cap({0: 0}, {0: 10}, 100) == {0: 10}
    assert _cap({0: 0, 1: 0}, {0: 1000, 1: 1000}, 1) == {0: 1, 1: 1}


def test_merge_offsets_by_topic_and_idle_check():
    merged = merge_offsets([("kafka a", '{"t": {"0": 5, "1": 7}}'), ("rate", '{"x": 1}'),
                            ("kafka b", {"u": {"0": 3}})])
    assert merged["t"] == {"0": 5, "1": 7} and merged["u"] == {"0": 3}
    assert reached(merged, {"t": {"0": 5, "1": 7}})
    assert not reached(merged, {"t": {"0": 6, "1": 7}})
    assert reached({}, {"t": {"0": 0}})  # an empty partition is idle from the start
    assert parse_offsets('{"t": {"0": "4"}}') == {"t": {"0": 4}}


# -- reset strategy, lost offsets, group ids: no broker needed ----------------------

RAW = StructType([StructField("value", StringType())])


def test_reset_strategy_values():
    assert reset_strategy(None) == reset_strategy("") == "earliest"
    assert reset_strategy(" Latest ") == "latest"
    assert reset_strategy("COMMITTED") == "committed"
    assert reset_strategy("1700000000000") == 1_700_000_000_000
    for bad in ("newest", "-1", "1.5", '{"t": {"0": 1}}'):
        with pytest.raises(ConnectorError, match="expected earliest, latest, committed or a "
                                                 "timestamp"):
            reset_strategy(bad)


def test_reader_options_are_checked_without_connecting():
    base = {"topic": "t", "bootstrap": "127.0.0.1:1"}
    r = KafkaStreamReader(RAW, {**base, "startingOffsets": "1700000000000", "groupId": "g",
                                "failOnDataLoss": "FALSE"})
    assert (r.starting, r.group_id, r.fail_on_data_loss) == (1_700_000_000_000, "g", False)
    r = KafkaStreamReader(RAW, base)  # defaults; Spark lower-cases the option keys
    assert (r.starting, r.group_id, r.fail_on_data_loss, r.request_timeout_ms) == \
        ("earliest", None, True, 30_000)
    assert KafkaStreamReader(RAW, {**base, "failondataloss": "true"}).fail_on_data_loss
    with pytest.raises(ConnectorError, match="failOnDataLoss must be true or false, got 'no'"):
        KafkaStreamReader(RAW, {**base, "failOnDataLoss": "no"})
    with pytest.raises(ConnectorError, match="unknown reset strategy 'soonest'"):
        KafkaStreamReader(RAW, {**base, "startingOffsets": "soonest"})
    with pytest.raises(ConnectorError, match="requestTimeoutMs must be at least 1000"):
        KafkaStreamReader(RAW, {**base, "requestTimeoutMs": "10"})


def test_lost_start_fails_or_warns_naming_topic_partition_and_offsets(caplog):
    assert lost_start("t", 3, 10, 10, True) == 10  # nothing lost
    assert lost_start("t", 3, 12, 10, True) == 12
    with pytest.raises(ConnectorError,
                       match=r"offsets 4\.\.9 of topic 't' partition 3 are no longer on the "
                             r"broker .*\"fail.on.data.loss\"=\"false\""):
        lost_start("t", 3, 4, 10, True)
    caplog.set_level(logging.WARNING, logger="streamjob.connectors.kafka.source")
    assert lost_start("t", 3, 4, 10, False) == 10
    [rec] = [r for r in caplog.records if r.name == "streamjob.connectors.kafka.source"]
    assert rec.levelno == logging.WARNING
    assert "offsets 4..9 of topic 't' partition 3" in rec.getMessage()
    assert "continues at offset 10" in rec.getMessage()


def test_default_group_id_and_nothing_to_commit_makes_no_connection():
    assert default_group_id("sales", "orders_job") == "streamjob.sales.orders_job"
    committer = GroupCommitter("127.0.0.1:1", "g", ["mine"])  # nothing listens there
    committer.commit({})
    committer.commit({"other": {"0": 5}})  # not one of its topics
    committer.commit({"mine": {"0": -1}})  # no valid offset
    assert committer._consumer is None
    committer.close()


def test_log_to_stderr_adds_one_warning_handler(capsys):
    name = f"streamjob_test_{uuid.uuid4().hex[:8]}"
    assert worker.log_to_stderr(name) is True
    assert worker.log_to_stderr(name) is False  # already has one
    logger = logging.getLogger(name)
    logger.info("not shown")
    logger.warning("shown %d", 7)
    err = capsys.readouterr().err
    assert f"streamjob WARNING {name}: shown 7" in err and "not shown" not in err
    assert not logger.propagate


def test_kafka_source_warnings_reach_stderr_in_a_pyspark_worker_process():
    """The module imported in a fresh process whose main module is a pyspark one (as in
    Spark's Python workers and source runner) logs the lost-offsets warning to stderr;
    imported elsewhere (this pytest process) it configures nothing."""
    code = (
        "import sys, types\n"
        "sys.modules['__main__'].__spec__ = types.SimpleNamespace(name='pyspark.daemon')\n"
        "from streamjob.connectors.kafka.source import lost_start\n"
        "print(lost_start('clicks', 2, 5, 9, False))\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "9"
    assert ("streamjob WARNING streamjob.connectors.kafka.source: offsets 5..8 of topic "
            "'clicks' partition 2 are no longer on the broker") in res.stderr
    assert not logging.getLogger("streamjob").handlers


def test_a_streams_request_timeout_reaches_the_reader_option():
    """``kafka.request.timeout.ms`` (Kafka's consumer request.timeout.ms) is typed on the
    stream, carried by its spec and bounds the reader's requests; below 1 s is refused."""
    from streamjob.connectors import spec as cspec
    from streamjob.exceptions import PropertyError

    base = {"topic": "t", "kafka.broker.list": "127.0.0.1:9092"}
    assert cspec.source_spec("s", base, None).request_timeout_ms == 30_000
    sp = cspec.source_spec("s", {**base, "kafka.request.timeout.ms": "2 s"}, None)
    assert sp.request_timeout_ms == 2_000
    reader = KafkaStreamReader(RAW, {"topic": "t", "bootstrap": "127.0.0.1:9092",
                                     "requestTimeoutMs": str(sp.request_timeout_ms)})
    assert reader.request_timeout_ms == 2_000
    with pytest.raises(PropertyError, match="kafka.request.timeout.ms"):
        cspec.source_spec("s", {**base, "kafka.request.timeout.ms": "500"}, None)


def test_a_file_job_is_caught_up_only_once_its_recorder_saw_every_committed_batch():
    """Spark commits a file stream's batch (and its files) before the listener reports
    it: until the recorder's step 8 has seen the last committed batch, its checkpoint
    and counts are not in the catalog, so ``run --until-idle`` waits (integration run of
    2026-11-27: test_missing_columns found no counts right after the wait)."""
    from streamjob.manager.idle import recorded

    assert recorded(None, [])  # nothing committed: nothing to record
    assert not recorded(None, [0])  # batch 0 committed, not reported yet
    assert not recorded(3, [0, 1, 2, 3, 4])
    assert recorded(4, [0, 1, 2, 3, 4]) and recorded(5, [4])
