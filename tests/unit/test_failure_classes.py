"""Which failures a restart cannot fix (issue 16 point b): ``permanent_failure`` over
the texts Spark and our code give, as failover (manager/runner.py) sees them."""

from __future__ import annotations

import pytest

from streamjob.connectors.kafka.policy import beyond_end, lost_start
from streamjob.exceptions import (CatalogError, CheckpointError, ConnectorError, JobError,
                                  PropertyError, SchemaMismatch)
from streamjob.manager.failures import (CHANGED_LOGIC, DATA_LOSS, INVALID_CONFIG, SINK_SCHEMA,
                                        permanent_failure)

pytestmark = pytest.mark.unit


def _worker(error: str, message: str) -> Exception:
    """What Spark raises when our code fails in the Python source runner or a worker."""
    return Exception(
        "[STREAM_FAILED] Query [id = 7a10eb12, runId = 992b6067] terminated with exception: "
        "[PYTHON_EXCEPTION] An exception was thrown from the Python worker: Traceback (most "
        "recent call last):\n  File \"/work/main/streamjob/connectors/kafka/source.py\", "
        "line 260, in latestOffset\n    raise ConnectorError(...)\n"
        f"{error}: {message}\n SQLSTATE: 38000\n"
        "\tat org.apache.spark.api.python.BasePythonRunner.handlePythonException(PythonRunner.scala:700)\n")


def _raised(fn, *args) -> str:
    with pytest.raises(ConnectorError) as info:
        fn(*args)
    return str(info.value)


RECREATED = _raised(beyond_end, "orders", 0, 30, 5, 0, True)
RETENTION = _raised(lost_start, "orders", 0, 10, 25, True)
SPARK_KAFKA = (
    "[KAFKA_DATA_LOSS.START_OFFSET_RESET] Some data may have been lost because they are not "
    "available in Kafka any more; either the data was aged out by Kafka or the topic may have "
    "been deleted before all the data in the topic was processed. If you don't want your "
    "streaming query to fail on such cases, set the source option failOnDataLoss to false. "
    "Reason: Starting offset for orders-0 was 30 but it is 5 now.")
OUT_OF_RANGE = ("org.apache.kafka.clients.consumer.OffsetOutOfRangeException: Fetch position "
                "FetchPosition{offset=30} is out of range for partition orders-0")


@pytest.mark.parametrize("exc", [
    _worker("streamjob.exceptions.ConnectorError", RECREATED),
    _worker("streamjob.exceptions.ConnectorError", RETENTION),
    ConnectorError(RECREATED),
    Exception(SPARK_KAFKA),
    Exception(OUT_OF_RANGE),
], ids=["recreated topic", "retention", "in process", "spark kafka", "out of range"])
def test_data_loss_is_permanent_and_says_how_to_start_over(exc):
    note = permanent_failure(exc, "orders_job")
    assert note == DATA_LOSS.format(job="orders_job")
    assert "a restart cannot fix this" in note
    assert "START STREAMJOB orders_job FROM EARLIEST" in note and "fail.on.data.loss" in note


CHANGED = ("streamjob default.agg cannot resume from its checkpoints: its query changed since "
           "they were taken, and Spark cannot carry a stateful query's checkpoint across that. "
           "To start fresh, DROP STREAMJOB default.agg (its checkpoints are purged) and CREATE "
           "it again.")
STATE_SCHEMA = (
    "[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE] Provided key schema does not match existing state "
    "key schema. Please check number and type of fields. Existing key_schema=StructType("
    "StructField(k,StringType,true)) and new key_schema=StructType(StructField(k,LongType,true)).")
OPERATORS = (
    "[STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA] Streaming stateful operator name "
    "does not match with the operator in state metadata. This likely to happen when user "
    "adds/removes/changes stateful operator of existing streaming query.")


@pytest.mark.parametrize("exc", [Exception(CHANGED), Exception(STATE_SCHEMA), Exception(OPERATORS)],
                         ids=["ours", "state schema", "operators"])
def test_changed_logic_is_permanent(exc):
    assert permanent_failure(exc, "agg") == CHANGED_LOGIC.format(job="agg")


MISMATCH = ("SQL table 'totals' at sqlite:///x.db does not match its declaration: column 'n' is "
            "TEXT, declared BIGINT. Alter the table to match (or drop it and let the job create "
            "it from the declaration), or change the table's declared columns or "
            "\"primary.key\"; then start the job again")


def test_a_sink_schema_mismatch_in_a_worker_is_permanent():
    assert permanent_failure(_worker("streamjob.exceptions.SchemaMismatch", MISMATCH), "j") \
        == SINK_SCHEMA.format(job="j")


@pytest.mark.parametrize("exc", [
    _worker("streamjob.exceptions.ConnectorError",
            "option checkCrcs must be auto, true or false, got 'maybe'"),
    Exception("[INVALID_CONF_VALUE] The value 'x' in the config "
              "\"spark.sql.shuffle.partitions\" is invalid."),
    Exception("org.apache.kafka.common.config.ConfigException: Invalid value x for "
              "configuration acks"),
], ids=["connector option", "spark conf", "kafka config"])
def test_invalid_configuration_is_permanent(exc):
    assert permanent_failure(exc, "j") == INVALID_CONFIG.format(job="j")


@pytest.mark.parametrize("exc", [
    JobError(CHANGED), SchemaMismatch(MISMATCH), PropertyError("x must be an integer"),
    CheckpointError("checkpoint directory /h/ck belongs to another job"),
], ids=["changed logic", "schema mismatch", "property", "checkpoint identity"])
def test_our_errors_other_than_connector_and_catalog_ones_are_permanent(exc):
    assert permanent_failure(exc, "j").startswith("a restart cannot fix this")


@pytest.mark.parametrize("exc", [
    _worker("streamjob.exceptions.ConnectorError",
            "cannot reach Kafka broker at 127.0.0.1:9: KafkaTimeoutError: Unable to bootstrap "
            "from ['127.0.0.1:9']"),
    ConnectorError("cannot reach Kafka broker at 127.0.0.1:9 for topic 't'"),
    _worker("streamjob.exceptions.ConnectorError",
            "topic 't' does not exist on Kafka broker 127.0.0.1:9"),
    Exception("(psycopg.OperationalError) connection failed: connection to server at "
              "\"127.0.0.1\", port 5432 failed: Connection refused"),
    CatalogError("the catalog database is unreachable: connection refused"),
    Exception("java.lang.IllegalStateException: batch 3 doesn't exist"),
], ids=["broker down", "broker down in process", "missing topic", "database down",
        "catalog down", "unrecognised"])
def test_transient_errors_are_retried(exc):
    assert permanent_failure(exc, "j") is None
