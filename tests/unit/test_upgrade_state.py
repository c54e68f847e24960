"""The pieces of issue 30 points 1-3 that need no Spark: the grammar of WITH STATE RESET,
reading Spark's state schema refusal (executor/state_trial.py), the committed offsets a
state reset keeps, and the Kafka source's given start offsets."""

from __future__ import annotations

import pytest

from streamjob.connectors.kafka.policy import reset_strategy, start_position
from streamjob.exceptions import ConnectorError, JobError
from streamjob.executor.state_trial import _refusal
from streamjob.executor.upgrade import committed_offsets
from streamjob.grammar import parse_script
from streamjob.planner.upgrade import ChangeKind, Operator

SPARK_TEXT = (
    "[STREAM_FAILED] Query [id = 2a5d, runId = cbca] terminated with exception: "
    "[STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE] Provided value schema does not match "
    "existing state value schema.\nPlease check number and type of fields.\nExisting "
    "value_schema=StructType(StructField(count,LongType,true),StructField(sum,LongType,true))"
    " and new value_schema=StructType(StructField(count,LongType,true),StructField(sum,"
    "DoubleType,true)).\nIf you want to force running the query without schema validation")
AGG = Operator("streaming aggregation", ("name",), ("count(*)", "sum(v)"), ("name",))


@pytest.mark.unit
def test_with_state_reset_parses_after_alter_and_from_savepoint():
    alter = parse_script('ALTER STREAMJOB j AS ("insert into t select 1 from s") '
                         "with state reset;")[0]
    assert alter.state_reset and alter.start_from is None
    assert alter.where("state_reset").column == 56
    start = parse_script("START STREAMJOB j FROM SAVEPOINT sp WITH STATE RESET;")[0]
    assert start.from_savepoint == "sp" and start.state_reset
    assert not parse_script("START STREAMJOB j FROM SAVEPOINT sp;")[0].state_reset
    shadow = parse_script('ALTER STREAMJOB j AS ("x") WITH SHADOW;')[0]
    assert type(shadow).__name__ == "AlterShadow"


@pytest.mark.unit
def test_a_value_schema_refusal_names_the_operator_and_the_aggregate():
    change = _refusal(SPARK_TEXT, [AGG], "default.j")
    assert change.kind is ChangeKind.INCOMPATIBLE
    assert (change.operator, change.column) == ("streaming aggregation", "sum(v)")
    assert change.reasons == ("streaming aggregation: Spark's state schema check refuses its "
                              "state value (sum(v) was bigint, is now double): the state kept "
                              "in the checkpoint cannot be read by the new query",)
    assert "WITH STATE RESET" in change.summary()


@pytest.mark.unit
def test_a_key_schema_refusal_names_the_key_and_other_failures_are_no_verdict():
    text = ("[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE] Provided key schema does not match "
            "existing state key schema. Existing key_schema=StructType(StructField(k,"
            "IntegerType,true)) and new key_schema=StructType(StructField(k,StringType,true))."
            " If you want to force")
    change = _refusal(text, [AGG], "default.j")
    assert change.column == "name" and "(name was int, is now string)" in change.reasons[0]
    with pytest.raises(JobError, match="could not run: .*broker down"):
        _refusal("java.lang.RuntimeException: broker down", [AGG], "default.j")


@pytest.mark.unit
def test_committed_offsets_are_those_of_the_last_committed_batch(tmp_path):
    (tmp_path / "offsets").mkdir()
    (tmp_path / "commits").mkdir()
    for n, (a, b) in enumerate([(10, 12), (20, 22), (30, 31)]):
        (tmp_path / "offsets" / str(n)).write_text(
            f'v1\n{{"batchWatermarkMs":0}}\n{{"t": {{"0": {a}, "1": {b}}}}}\n{{"u": {{"0": {n}}}}}')
    assert committed_offsets(str(tmp_path)) is None
    for n in (0, 1):  # batch 2 is logged, not committed: it is read again
        (tmp_path / "commits" / str(n)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    assert committed_offsets(str(tmp_path)) == '{"t": {"0": 20, "1": 22}, "u": {"0": 1}}'


@pytest.mark.unit
def test_the_kafka_source_takes_given_offsets_as_its_start():
    assert start_position('{"t": {"0": 20, "1": 22}}') == {"t": {"0": 20, "1": 22}}
    assert start_position("latest") == "latest" and start_position("1700000000000") == 1700000000000
    with pytest.raises(ConnectorError, match="are not"):
        start_position('{"t": [1]}')
    with pytest.raises(ConnectorError, match="unknown reset strategy"):  # a stream's own
        reset_strategy('{"t": {"0": 1}}')
