"""The checkpoint recorder's steps (streamjob/checkpoint/recorder.py) without Spark: a real
SQLite catalog as the backend, a real checkpoint directory whose commit markers, logs and
state files are written as Spark writes them, and progress reports with Spark's fields.
Output and checkpoints run on two cadences (DESIGN §4): every committed micro-batch wakes
waiters, only the one completing after each interval is a recorded checkpoint."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

import pytest

from streamjob.catalog import Catalog
from streamjob.checkpoint.recorder import (CheckpointRecorder, CheckpointTracker,
                                           batches_to_retain)
from streamjob.checkpoint.store import trim_state

pytestmark = pytest.mark.unit

T0 = dt.datetime(2026, 11, 24, 12, 0, 0, tzinfo=dt.timezone.utc)


@pytest.fixture
def job(tmp_path):
    catalog = Catalog(f"sqlite:///{tmp_path / 'catalog.db'}")
    catalog.create_job("default", "j", "insert into t select * from s", {}, [])
    info = catalog.get_job("default", "j")
    ckdir = tmp_path / "ck"
    for log in ("offsets", "commits"):
        (ckdir / log).mkdir(parents=True)
    return SimpleNamespace(catalog=catalog, uid=info.uid, ckdir=ckdir)


def _batch(job, batch_id: int, at_s: float, rows: int = 10, commit: bool = True):
    """Spark's files of one micro-batch, and its progress report (started ``at_s`` after T0,
    100 ms long, reading partition 0 of topic t up to offset ``(batch_id + 1) * 10``)."""
    (job.ckdir / "offsets" / str(batch_id)).write_text("v1\n{}\n{}\n")
    if commit:
        (job.ckdir / "commits" / str(batch_id)).write_text("v1\n{}\n")
    started = T0 + dt.timedelta(seconds=at_s)
    return SimpleNamespace(
        batchId=batch_id, timestamp=started.isoformat().replace("+00:00", "Z"),
        batchDuration=100, numInputRows=rows, stateOperators=[], observedMetrics={},
        sources=[SimpleNamespace(description="kafka[t]",
                                 endOffset=f'{{"t": {{"0": {(batch_id + 1) * 10}}}}}')])


def _recorder(job, interval_ms: int, retained: int = 3, **kw):
    tracker = CheckpointTracker()
    return CheckpointRecorder(job.catalog, job.uid, "default.j", str(job.ckdir), retained,
                              tracker, interval_ms=interval_ms, **kw), tracker


def _ids(job) -> list[int]:
    return [c.checkpoint_id for c in job.catalog.list_checkpoints(job.uid)]


def test_only_the_micro_batch_completing_after_each_interval_is_a_checkpoint(job):
    rec, tracker = _recorder(job, interval_ms=60_000)
    for i, at in enumerate([0, 1, 2, 30, 59.95, 60.0, 62]):
        rec.record(_batch(job, i, at))
        assert tracker.batch_id == i and tracker.offsets == {"t": {"0": (i + 1) * 10}}
    # batch 0 (the first) and batch 5 (ends at 60.1 s, 60 s after batch 0 ended at 0.1 s);
    # batch 4 ends at 60.05 s, 50 ms short of the interval
    assert _ids(job) == [0, 5] and tracker.latest_id == 5 and tracker.completed == 2
    rows = {c.checkpoint_id: c.input_rows for c in job.catalog.list_checkpoints(job.uid)}
    assert rows == {0: 10, 5: 50}  # the rows of every micro-batch since the previous one


def test_an_uncommitted_batch_is_neither_seen_nor_recorded(job):
    rec, tracker = _recorder(job, interval_ms=0)
    rec.record(_batch(job, 0, 0, commit=False))
    assert tracker.batch_id is None and _ids(job) == []


def test_interval_zero_makes_every_micro_batch_a_checkpoint_and_trims_to_the_retained(job):
    rec, tracker = _recorder(job, interval_ms=0, retained=3)
    for i in range(6):
        rec.record(_batch(job, i, i))
    assert _ids(job) == [3, 4, 5]
    commits = sorted(int(p.name) for p in (job.ckdir / "commits").iterdir())
    offsets = sorted(int(p.name) for p in (job.ckdir / "offsets").iterdir())
    assert commits == [3, 4, 5] and offsets == [2, 3, 4, 5]  # n-1 resumes n


def test_logs_are_kept_back_to_the_oldest_retained_checkpoint_and_no_further(job):
    rec, _ = _recorder(job, interval_ms=10_000, retained=2)
    for i in range(25):  # a batch per second: checkpoints 0, 10, 20
        rec.record(_batch(job, i, i))
    assert _ids(job) == [10, 20]
    commits = sorted(int(p.name) for p in (job.ckdir / "commits").iterdir())
    assert commits == list(range(10, 25))


def test_a_graceful_stop_makes_the_last_micro_batch_a_checkpoint(job):
    seen = []
    rec, tracker = _recorder(job, interval_ms=60_000,
                             on_checkpoint=lambda i, offsets: seen.append((i, offsets)))
    for i in range(3):
        rec.record(_batch(job, i, i))
    assert _ids(job) == [0]
    assert rec.checkpoint_now() == 2 and rec.checkpoint_now() is None
    assert _ids(job) == [0, 2] and tracker.latest_id == 2
    assert seen == [(0, {"t": {"0": 10}}), (2, {"t": {"0": 30}})]  # group commits per checkpoint


def test_a_backend_failure_keeps_the_batch_pending_and_the_next_one_due(job):
    rec, tracker = _recorder(job, interval_ms=60_000)
    calls = []
    real = rec.backend.record

    def flaky(*a, **kw):
        calls.append(a[1].checkpoint_id)
        if len(calls) == 1:
            raise RuntimeError("database is locked")
        return real(*a, **kw)

    rec.backend.record = flaky
    with pytest.raises(RuntimeError):
        rec.record(_batch(job, 0, 0))
    assert tracker.batch_id == 0  # the batch committed: waiters see it all the same
    rec.record(_batch(job, 1, 1))
    assert calls == [0, 1] and _ids(job) == [1]
    assert job.catalog.list_checkpoints(job.uid)[0].input_rows == 20


def test_state_versions_are_trimmed_to_the_snapshot_the_oldest_checkpoint_needs(tmp_path):
    part = tmp_path / "state" / "0" / "1"
    join = tmp_path / "state" / "1" / "0" / "left-keyToNumValues"
    for d in (part, join):
        d.mkdir(parents=True)
        for v in range(1, 13):
            (d / f"{v}.delta").write_text("x")
            (d / f".{v}.delta.crc").write_text("x")
        for v in (5, 10):
            (d / f"{v}.snapshot").write_text("x")
    (tmp_path / "state" / "0" / "_metadata").mkdir()
    (tmp_path / "state" / "0" / "_metadata" / "metadata").write_text("x")
    # oldest retained checkpoint 8: Spark resumes it from version 9 = snapshot 5 + deltas 6..9
    assert trim_state(str(tmp_path), 8) == 2 * 8
    for d in (part, join):
        names = sorted(p.name for p in d.iterdir() if not p.name.startswith("."))
        assert names == sorted([f"{v}.delta" for v in range(5, 13)] + ["5.snapshot", "10.snapshot"])
    assert (tmp_path / "state" / "0" / "_metadata" / "metadata").exists()
    assert trim_state(str(tmp_path), 3) == 0  # no snapshot at or below version 4: all kept


def test_spark_keeps_enough_batches_for_the_oldest_retained_checkpoint():
    assert batches_to_retain(5, 60_000, 500) == 5 * 121 + 1
    assert batches_to_retain(5, 0, 500) == 6  # every micro-batch a checkpoint
    assert batches_to_retain(5, 60_000, 0) == 5 * 6001 + 1  # event mode: 10 ms per batch
    assert batches_to_retain(10_000, 3_600_000, 0) == 1_000_000


def test_a_batch_committed_between_checkpoints_of_a_failed_run_is_recorded_without_blaming_a_crash(
        job, caplog):
    """A run that fails after a committed micro-batch that was not yet due as a checkpoint
    (the guide's section 6: batch 126 committed, batch 127 failed on a locked sink) leaves
    that batch for the next run to record from the checkpoint directory. The warning says
    what happened, not that the process died (it did not: the batch after it failed)."""
    from streamjob.checkpoint.backends import CatalogBackend
    from streamjob.checkpoint.recorder import JobRef, recover_unrecorded

    rec, _ = _recorder(job, interval_ms=60_000)
    rec.record(_batch(job, 0, 0))  # a checkpoint
    rec.record(_batch(job, 1, 5))  # committed, not due: the run then fails on batch 2
    assert _ids(job) == [0]
    with caplog.at_level("WARNING"):
        latest = recover_unrecorded(CatalogBackend(job.catalog), JobRef.of(job.uid, "default.j"),
                                    str(job.ckdir), retained=3)
    assert latest.checkpoint_id == 1 and _ids(job) == [0, 1]
    message = caplog.text
    assert "Checkpoint[1] of job {default.j} was committed but not recorded" in message
    assert "died" not in message or "failed" in message, message


def test_a_savepoint_pin_holds_the_trim_back_until_it_is_removed(job):
    import json
    import time

    from streamjob.checkpoint import savepoint

    rec, _ = _recorder(job, interval_ms=0, retained=2)
    for i in range(3):
        rec.record(_batch(job, i, i))
    pin = job.ckdir / savepoint.PIN  # a savepoint is copying checkpoint 1
    pin.write_text(json.dumps({"checkpoint_id": 1, "at": time.time()}))
    for i in range(3, 6):
        rec.record(_batch(job, i, i))
    assert _ids(job) == [4, 5]  # the records follow retention; the files wait for the pin
    assert sorted(int(p.name) for p in (job.ckdir / "commits").iterdir() if p.name.isdigit()) \
        == [1, 2, 3, 4, 5]
    assert sorted(int(p.name) for p in (job.ckdir / "offsets").iterdir() if p.name.isdigit()) \
        == [0, 1, 2, 3, 4, 5]
    pin.unlink()
    rec.record(_batch(job, 6, 6))
    assert sorted(int(p.name) for p in (job.ckdir / "commits").iterdir()) == [5, 6]
