"""A user function's failure, named and placed (issue 31 point 5): the wrapper's report
of the first failing row (pandas, as Spark's Arrow batches hand it), the error's wire
form through Spark's text and back, the failed micro-batch's Kafka input read from a
checkpoint's offsets log as Spark 4.3 writes it, and the repeated failure that ends
the job. tests/integration/test_user_functions.py runs them on real Spark and Kafka."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from streamjob.exceptions import RepeatedFunctionError, UserFunctionError
from streamjob.manager.failures import (REPEATED_FUNCTION, batch_position, permanent_failure,
                                        repeated, user_function_failure)
from streamjob.manager.runner import error_summary
from streamjob.spark.udf import ARGUMENT_CHARS, guarded

pytestmark = pytest.mark.unit


def picky(x, label):
    if (x > 100).any():
        raise ValueError(f"x too large: {x.max()}")
    return label + x.astype(str)


def _raise(fn, *columns) -> UserFunctionError:
    with pytest.raises(UserFunctionError) as info:
        guarded("picky", fn)(*columns)
    return info.value


def _worker(error: UserFunctionError) -> Exception:
    """Spark's text of a failure raised in a Python worker (see test_failure_classes)."""
    return Exception(
        "[STREAM_FAILED] Query [id = 7a10eb12] terminated with exception: Job aborted due "
        "to stage failure: [PYTHON_EXCEPTION] An exception was thrown from the Python "
        "worker: Traceback (most recent call last):\n  File \"/x/udf.py\", line 80, in call\n"
        f"streamjob.exceptions.UserFunctionError: {error}\n SQLSTATE: 38000\n"
        "\tat org.apache.spark.api.python.BasePythonRunner.handlePythonException(PythonRunner.scala:700)\n")


def test_the_wrapper_names_the_function_and_the_first_failing_row_and_its_arguments_only():
    x = pd.Series([1.0, 2.0, 150.5, 300.0])
    label = pd.Series(["a", "b", "c" * 200, "d"])
    err = _raise(picky, x, label)
    assert (err.function, err.error_type) == ("picky", "ValueError")
    assert err.error_message == "x too large: 300.0"  # the batch's message
    (xname, xval), (lname, lval) = err.arguments
    assert (xname, xval) == ("x", "150.5")  # the first row failing alone
    assert lname == "label" and len(lval) == ARGUMENT_CHARS and lval.endswith("...")
    assert str(err).startswith(UserFunctionError.marker + " {")  # the wire form
    assert "\n" not in str(err)


def test_a_function_that_fails_only_on_the_whole_batch_names_no_row():
    def pairs(x):
        if len(x) > 1:
            raise RuntimeError("one row at a time")
        return x
    err = _raise(pairs, pd.Series([1, 2, 3]))
    assert err.arguments == () and err.error_type == "RuntimeError"


def test_the_wire_form_comes_back_from_sparks_text_without_the_trace():
    err = _raise(picky, pd.Series([500.0]), pd.Series(["q"]))
    back = UserFunctionError.from_text(str(_worker(err)))
    assert back is not None and back.arguments == err.arguments
    line = error_summary(_worker(err))
    assert line == ("function picky raised ValueError: x too large: 500.0; "
                    "first failing row: picky(x=500.0, label='q')")
    assert UserFunctionError.from_text("[PYTHON_EXCEPTION] ValueError: boom") is None


def _checkpoint(tmp_path, entries: dict[int, dict], committed: list[int]) -> str:
    """A checkpoint's offsets and commits logs as Spark 4.3 writes them."""
    for name in ("offsets", "commits"):
        (tmp_path / name).mkdir()
    meta = json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": 1, "conf": {}})
    for batch, offsets in entries.items():
        (tmp_path / "offsets" / str(batch)).write_text(
            "\n".join(["v1", meta, json.dumps(offsets), "-"]))
    for batch in committed:
        (tmp_path / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    return str(tmp_path)


def test_the_failed_batch_is_placed_at_its_kafka_input(tmp_path):
    ckdir = _checkpoint(tmp_path, {0: {"t": {"0": 10, "1": 4}},
                                   1: {"t": {"0": 25, "1": 4, "2": 3}}}, [0])
    err = _raise(picky, pd.Series([500.0]), pd.Series(["q"]))
    placed = user_function_failure(_worker(err), ckdir)
    assert placed.batch == 1
    assert placed.position == ("topic t partition 0 offsets [10, 25); "
                               "topic t partition 2 offsets [0, 3)")
    assert str(placed).endswith("in micro-batch 1, input topic t partition 0 offsets "
                                "[10, 25); topic t partition 2 offsets [0, 3)")
    assert permanent_failure(placed, "j") is None  # once: retried like any failure
    assert user_function_failure(Exception("boom"), ckdir) is None


def test_batch_zero_and_a_committed_log_have_no_start_or_no_batch(tmp_path):
    assert batch_position(['{"t": {"0": 7}}', "-"], None) == "topic t partition 0 offsets up to 7"
    assert batch_position(['{"logOffset": 3}'], ['{"logOffset": 2}']) is None  # not Kafka
    ckdir = _checkpoint(tmp_path, {0: {"t": {"0": 7}}}, [0])
    err = _raise(picky, pd.Series([500.0]), pd.Series(["q"]))
    assert user_function_failure(_worker(err), ckdir).batch is None  # nothing in flight


def test_the_same_failure_on_the_same_input_twice_is_permanent(tmp_path):
    ckdir = _checkpoint(tmp_path, {0: {"t": {"0": 10}}}, [])
    err = _raise(picky, pd.Series([500.0]), pd.Series(["q"]))
    first = user_function_failure(_worker(err), ckdir)
    assert repeated([], first) is first
    other = _raise(picky, pd.Series([600.0]), pd.Series(["q"]))
    another = user_function_failure(_worker(other), ckdir)
    assert not isinstance(repeated([first], another), RepeatedFunctionError)  # another row
    second = repeated([first, another], user_function_failure(_worker(err), ckdir))
    assert isinstance(second, RepeatedFunctionError)
    assert permanent_failure(second, "j") == REPEATED_FUNCTION.format(job="j")
    assert str(second).startswith(RepeatedFunctionError.marker + " function picky raised")
    unplaced = user_function_failure(_worker(err), None)
    assert not isinstance(repeated([unplaced], unplaced), RepeatedFunctionError)  # no input
