"""A running job's lag and rates (issue 16): the computation of
:mod:`streamjob.manager.lag` and what :class:`~streamjob.manager.progress.ProgressReporter`
writes for one run — unknown (None) before the run knows, never the previous run's
numbers nor 0; lag = the broker's end offsets minus the offsets the run committed."""

from __future__ import annotations

from types import SimpleNamespace as Report

import pytest

from streamjob.catalog import Catalog
from streamjob.checkpoint.recorder import CheckpointTracker
from streamjob.manager.lag import kafka_offsets, lag_by_partition, merge
from streamjob.manager.progress import ProgressReporter

pytestmark = pytest.mark.unit


def test_kafka_offsets_reads_spark_shapes_only():
    assert kafka_offsets('{"t": {"0": 5, "1": 7}}') == {"t": {"0": 5, "1": 7}}
    assert kafka_offsets({"t": {0: "5"}}) == {"t": {"0": 5}}
    # a file source's log offset, a rate source's number, nothing, bad JSON
    for other in ('{"logOffset": 3}', "42", None, {}, "not json", {"t": {"0": "x"}}):
        assert kafka_offsets(other) is None


def test_merge_picks_per_partition():
    a, b = {"t": {"0": 5, "1": 9}}, {"t": {"0": 7}, "u": {"0": 1}}
    assert merge(a, b, max) == {"t": {"0": 7, "1": 9}, "u": {"0": 1}}
    assert merge(a, b, min) == {"t": {"0": 5, "1": 9}, "u": {"0": 1}}
    assert merge(None, b, max) == b and merge(a, None, max) == a and merge(None, None, max) is None
    merged = merge(a, None, max)
    merged["t"]["0"] = 99
    assert a["t"]["0"] == 5  # a copy, never the caller's dict


def test_lag_is_end_offsets_minus_position():
    ends = {"t": {"0": 15, "1": 7, "2": 4}, "other": {"0": 3}}
    position = {"t": {"0": 10, "1": 9}}
    # partition 1 ahead of a stale end reading counts 0; partition 2 and topic "other",
    # which the position does not know, are not counted (unknown, not the whole partition)
    assert lag_by_partition(ends, position) == {"t:0": 5, "t:1": 0}
    assert lag_by_partition(ends, None) is None  # where the run resumes is unknown
    assert lag_by_partition(None, position) is None  # the broker was not read yet
    assert lag_by_partition({"u": {"0": 3}}, position) is None  # no common topic


@pytest.fixture
def reporter_of(tmp_path):
    """``make(start_offsets)``: a reporter of a fresh job in a SQLite catalog, writing
    whenever asked (interval 0); returns ``(reporter, catalog, uid)``."""
    cat = Catalog(f"sqlite:///{tmp_path}/catalog.db")
    cat.create_job("default", "j", "insert into t select * from s", {}, [],
                   check_dependencies=False)
    uid = cat.get_job("default", "j").uid

    def make(start_offsets=None):
        return ProgressReporter(cat, uid, "default.j", CheckpointTracker(), interval_s=0,
                                start_offsets=start_offsets), cat, uid

    yield make
    cat.close()


def _batch(batch_id, end, latest, input_rate=float("nan"), processed=500.0):
    return Report(batchId=batch_id, inputRowsPerSecond=input_rate,
                  processedRowsPerSecond=processed,
                  sources=[Report(endOffset=end, latestOffset=latest)])


def test_a_restarted_run_reports_unknown_then_its_own_lag_and_rates(reporter_of):
    """A run resuming from checkpoint offsets {t: 100, 100}: before its first batch ends
    its rates are unknown and its lag is the backlog the broker holds beyond them; each
    batch moves the position; idle means rate 0."""
    reporter, cat, uid = reporter_of({"t": {"0": 100, "1": 100}, "files-source": {"logOffset": 3}})
    now = reporter.current()
    assert (now["batch_id"], now["input_rows_per_s"], now["processed_rows_per_s"],
            now["lag_records"]) == (None, None, None, None)
    assert reporter.flush() is False  # nothing known: nothing written

    reporter.on_end_offsets({"t": {"0": 1100, "1": 600}})  # the probe read the broker
    assert reporter.flush() is True
    written = cat.get_job_by_uid(uid).progress
    assert written["lag_records"] == 1500 and written["lag_by_partition"] == {"t:0": 1000, "t:1": 500}
    assert written["input_rows_per_s"] is None and written["processed_rows_per_s"] is None
    assert written["batch_id"] is None
    reporter.on_end_offsets({"t": {"0": 1100, "1": 600}})
    assert reporter.flush() is False  # the same lag again: no write

    # the run's first batch (capped) ends: Spark could not measure its input rate (no
    # earlier trigger) and says 0 for it
    reporter.on_progress(_batch(7, '{"t": {"0": 600, "1": 350}}', '{"t": {"0": 1100, "1": 600}}',
                                input_rate=0.0))
    reporter.flush()
    written = cat.get_job_by_uid(uid).progress
    assert (written["batch_id"], written["input_rows_per_s"], written["processed_rows_per_s"],
            written["lag_records"]) == (7, None, 500.0, 750)

    # more arrived meanwhile: the probe's newer reading counts, not Spark's older one
    reporter.on_end_offsets({"t": {"0": 1200, "1": 600}})
    assert reporter.current()["lag_records"] == 850
    reporter.on_progress(_batch(8, '{"t": {"0": 1200, "1": 600}}', '{"t": {"0": 1200, "1": 600}}',
                                input_rate=3000.0, processed=9000.0))
    now = reporter.current()
    assert (now["lag_records"], now["input_rows_per_s"]) == (0, 3000.0)

    reporter.on_idle()
    now = reporter.current()
    assert (now["input_rows_per_s"], now["processed_rows_per_s"], now["lag_records"]) == (0.0, 0.0, 0)


def test_a_run_without_a_position_has_unknown_lag_until_its_first_batch(reporter_of):
    """A first start, or a job without durable checkpoints (it begins at its reset
    strategy): where it begins is unknown, so is its lag — not the whole topic, not 0."""
    reporter, _, _ = reporter_of(None)
    reporter.on_end_offsets({"t": {"0": 1000}})
    assert reporter.current()["lag_records"] is None
    reporter.on_idle()  # idle before any batch: rates 0 (this run's), lag still unknown
    now = reporter.current()
    assert (now["input_rows_per_s"], now["lag_records"]) == (0.0, None)
    reporter.on_progress(_batch(0, '{"t": {"0": 400}}', '{"t": {"0": 1000}}'))
    assert reporter.current()["lag_records"] == 600


def test_a_failed_broker_reading_leaves_sparks_view(reporter_of):
    reporter, _, _ = reporter_of({"t": {"0": 0}})
    reporter.on_progress(_batch(1, '{"t": {"0": 50}}', '{"t": {"0": 80}}'))
    reporter.on_end_offsets({"t": {"0": 200}})
    assert reporter.current()["lag_records"] == 150
    reporter.on_end_offsets(None)  # the broker could not be read
    assert reporter.current()["lag_records"] == 30  # beyond the batch, as Spark saw it
