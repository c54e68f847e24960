import pytest
"""One line a user can act on, from what Spark reports for a failed query."""

from streamjob.manager.summary import error_summary

pytestmark = pytest.mark.unit

WORKER = """[STREAM_FAILED] Query [id = 7a10eb12, runId = 992b6067] terminated with exception: \
[PYTHON_EXCEPTION] An exception was thrown from the Python worker: Traceback (most recent call last):
  File "/work/main/streamjob/connectors/kafka/formats.py", line 107, in _decode_json
    raise MalformedRecord(records.topic, records.partition, offset, str(exc)) from None
streamjob.connectors.kafka.formats.MalformedRecord: malformed record in topic 'faulty' partition 0 \
offset 2100: Expecting value: line 1 column 19 (char 18)
 SQLSTATE: 38000
\tat org.apache.spark.api.python.BasePythonRunner.handlePythonException(PythonRunner.scala:700)
"""


def test_our_error_raised_in_a_python_worker_is_the_summary():
    assert error_summary(Exception(WORKER)) == (
        "malformed record in topic 'faulty' partition 0 offset 2100: Expecting value: "
        "line 1 column 19 (char 18)")


def test_other_errors_give_their_first_meaningful_line():
    text = "java.lang.IllegalStateException: batch 3 doesn't exist\n\tat org.apache.X(X.scala:1)"
    assert error_summary(Exception(text)) == text.splitlines()[0]


#: Spark 4.3's text of a Hive UDF class that threw (from a job's query; trimmed).
HIVE_UDF = """[STREAM_FAILED] Query [id = 1, runId = 2] terminated with exception: Job aborted \
due to stage failure: Task 0 in stage 1.0 failed 1 times
Caused by: org.apache.spark.SparkException: [FAILED_EXECUTE_UDF] User defined function \
(`com`.`example`.`udf`.`Picky`: (string) => string) failed due to: \
org.apache.hadoop.hive.ql.metadata.HiveException: Unable to execute method public \
java.lang.String com.example.udf.Picky.evaluate(java.lang.String) with arguments \
{n6x6}:no sixes: n6x6. SQLSTATE: 39000
\tat org.apache.spark.sql.errors.QueryExecutionErrors$.failedExecuteUserDefinedFunctionError(X.scala:182)
"""


def test_a_hive_udf_that_threw_is_named_by_its_function():
    summary = error_summary(Exception(HIVE_UDF), {"com.example.udf.Picky": "default.picky"})
    assert summary == ("function default.picky raised HiveException: Unable to execute method "
                       "public java.lang.String com.example.udf.Picky.evaluate(java.lang.String) "
                       "with arguments {n6x6}:no sixes: n6x6")
    assert error_summary(Exception(HIVE_UDF)).startswith(
        "function com.example.udf.Picky raised HiveException: ")
