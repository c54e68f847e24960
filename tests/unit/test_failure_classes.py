"""Which failures a restart cannot fix (issue 16 point b; by class, issue 29 item 3):
``permanent_failure`` over our error classes, over Spark's text of them raised in a
Python worker (their marker), and over Spark's and Kafka's own messages, as failover
(manager/runner.py) sees them."""

from __future__ import annotations

import pytest

from streamjob.connectors.kafka.policy import beyond_end, lost_start
from streamjob.exceptions import (CatalogError, ChangedLogic, CheckpointError, ConnectorError,
                                  DataLoss, InvalidConfiguration, JobError, PropertyError,
                                  SchemaMismatch)
from streamjob.manager.failures import (CHANGED_LOGIC, DATA_LOSS, INVALID_CONFIG, SINK_SCHEMA,
                                        permanent_failure)

pytestmark = pytest.mark.unit


def _worker(error: str, message: str) -> Exception:
    """What Spark raises when our code fails in the Python source runner or a worker: a
    StreamingQueryException's text holding the worker's traceback, whose exception line
    is Python's ``traceback.format_exception_only``: ``module.Class: str(error)``
    (tests/integration/test_failure_markers.py checks that form against real Spark)."""
    return Exception(
        "[STREAM_FAILED] Query [id = 7a10eb12, runId = 992b6067] terminated with exception: "
        "[PYTHON_EXCEPTION] An exception was thrown from the Python worker: Traceback (most "
        "recent call last):\n  File \"/work/main/streamjob/connectors/kafka/source.py\", "
        "line 260, in latestOffset\n    raise ConnectorError(...)\n"
        f"{error}: {message}\n SQLSTATE: 38000\n"
        "\tat org.apache.spark.api.python.BasePythonRunner.handlePythonException(PythonRunner.scala:700)\n")


def _raised(fn, *args) -> str:
    with pytest.raises(DataLoss) as info:
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
    _worker("streamjob.exceptions.DataLoss", RECREATED),
    _worker("streamjob.exceptions.DataLoss", RETENTION),
    DataLoss(RECREATED),
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


@pytest.mark.parametrize("exc", [
    ChangedLogic(CHANGED), _worker("streamjob.exceptions.ChangedLogic", str(ChangedLogic(CHANGED))),
    Exception(STATE_SCHEMA), Exception(OPERATORS),
], ids=["ours", "ours in a worker", "state schema", "operators"])
def test_changed_logic_is_permanent(exc):
    assert permanent_failure(exc, "agg") == CHANGED_LOGIC.format(job="agg")


MISMATCH = ("SQL table 'totals' at sqlite:///x.db does not match its declaration: column 'n' is "
            "TEXT, declared BIGINT. Alter the table to match (or drop it and let the job create "
            "it from the declaration), or change the table's declared columns or "
            "\"primary.key\"; then start the job again")


def test_a_sink_schema_mismatch_in_a_worker_is_permanent():
    text = str(SchemaMismatch(MISMATCH, columns=("n",)))
    assert permanent_failure(_worker("streamjob.exceptions.SchemaMismatch", text), "j") \
        == SINK_SCHEMA.format(job="j")
    assert permanent_failure(SchemaMismatch(MISMATCH), "j") == SINK_SCHEMA.format(job="j")


@pytest.mark.parametrize("exc", [
    _worker("streamjob.exceptions.InvalidConfiguration",
            str(InvalidConfiguration("option checkCrcs must be auto, true or false, got 'x'"))),
    _worker("streamjob.exceptions.PropertyError", "property 'x' must be an integer, got 'y'"),
    _worker("streamjob.security.policy.PolicyError", "the secret reference ${env:A} names a "
            "variable outside the admin's pattern (SJ_*); the admin can widen x"),
    Exception("[INVALID_CONF_VALUE] The value 'x' in the config "
              "\"spark.sql.shuffle.partitions\" is invalid."),
    Exception("org.apache.kafka.common.config.ConfigException: Invalid value x for "
              "configuration acks"),
], ids=["connector option", "property in a worker", "policy in a worker", "spark conf",
        "kafka config"])
def test_invalid_configuration_is_permanent(exc):
    assert permanent_failure(exc, "j") == INVALID_CONFIG.format(job="j")


@pytest.mark.parametrize("exc", [
    JobError("streamjob default.agg cannot start"), PropertyError("x must be an integer"),
    CheckpointError("checkpoint directory /h/ck belongs to another job"),
], ids=["job", "property", "checkpoint identity"])
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


# -- by class, not by wording (issue 29 item 3) --------------------------------------------

KINDS = [(DataLoss, DATA_LOSS), (ChangedLogic, CHANGED_LOGIC), (SchemaMismatch, SINK_SCHEMA),
         (InvalidConfiguration, INVALID_CONFIG)]


@pytest.mark.parametrize("cls,note", KINDS, ids=[c.__name__ for c, _ in KINDS])
def test_each_kind_is_recognised_by_its_class_whatever_its_words(cls, note):
    """Any message (here one no rule could know) of a kind's class gets its note, in this
    process and raised in a worker (the class's marker in the first line of its text)."""
    exc = cls("something went wrong\nsecond line")
    assert str(exc).splitlines()[0].startswith(cls.marker)
    assert permanent_failure(exc, "j") == note.format(job="j")
    wrapped = _worker(f"streamjob.exceptions.{cls.__name__}", str(exc))
    assert permanent_failure(wrapped, "j") == note.format(job="j")
    # also when wrapped further (the marker survives as text; the class line does not)
    assert permanent_failure(Exception(f"query failed: {wrapped}"), "j") == note.format(job="j")


@pytest.mark.parametrize("text", [RECREATED, RETENTION, CHANGED, MISMATCH,
                                  "option checkCrcs must be auto, true or false, got 'x'"],
                         ids=["recreated", "retention", "changed logic", "sink schema", "option"])
def test_our_wording_without_the_class_is_not_classified(text):
    """Our old messages, stripped of the class and its marker, are retried: failover does
    not read our prose."""
    for cls, _ in KINDS:
        text = text.replace(cls.marker + " ", "")
    assert permanent_failure(ConnectorError(text), "j") is None
    assert permanent_failure(_worker("streamjob.exceptions.ConnectorError", text), "j") is None


def test_markers_are_one_per_class_stable_and_defined_with_the_class():
    from streamjob.exceptions import PermanentFailure
    from streamjob.manager import failures

    markers = [c.marker for c, _ in KINDS]
    assert len(set(markers)) == len(markers)
    assert all(m.startswith("[streamjob:") and m.endswith("]") for m in markers)
    assert {c for c, _ in failures._KINDS} == set(PermanentFailure.__subclasses__())  # noqa: SLF001


def test_failures_has_no_pattern_over_our_own_messages():
    """No pattern of failures.py matches what our code raises (the kinds' messages), and
    the module takes the kinds from streamjob.exceptions, not from their wording."""
    import ast
    from pathlib import Path

    from streamjob.manager import failures

    ours = [RECREATED, RETENTION, CHANGED, MISMATCH, str(SchemaMismatch(MISMATCH)),
            "option checkCrcs must be auto, true or false, got 'x'"]
    for _, pattern in failures._FOREIGN:  # noqa: SLF001
        for text in ours:
            assert not pattern.search(text), (pattern.pattern, text)
    tree = ast.parse(Path(failures.__file__).read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                and n.module == "exceptions" for a in n.names}
    assert {"DataLoss", "ChangedLogic", "SchemaMismatch", "InvalidConfiguration"} <= imported
    compiled = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
                and getattr(n.func, "attr", None) == "compile"]
    assert len(compiled) == len(failures._FOREIGN)  # noqa: SLF001  (every regex is foreign)


def test_a_delta_commit_a_stream_cannot_read_is_permanent():
    """A Delta stream that reached a DELETE or UPDATE reaches it again at every restart
    (its offsets are before it): failover ends the job, saying how to go on."""
    from streamjob.exceptions import NotAppendOnly
    from streamjob.manager.failures import NOT_APPEND_ONLY

    text = str(NotAppendOnly("the Delta table at /lake/t deleted rows at version 4 (DELETE: "
                             "1 data file(s) removed)"))
    assert text.startswith("[streamjob:not-append-only] ")
    note = permanent_failure(_worker("streamjob.exceptions.NotAppendOnly", text), "chain")
    assert note == NOT_APPEND_ONLY.format(job="chain")
    assert "START STREAMJOB chain FROM LATEST" in note and "skipChangeCommits" in note
    assert permanent_failure(NotAppendOnly("x"), "chain") == note
