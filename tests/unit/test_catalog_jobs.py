"""Tests of streamjob.catalog against SQLite (a file) and PostgreSQL (a fresh schema):
jobs (CRUD, cascading drops, uids of recreated jobs), their runs and their checkpoints
(retention, upserts, UTC times, truncation).

PostgreSQL is required: if it is unreachable, the PostgreSQL half of these tests fails
(it is not skipped). Its URL can be overridden with STREAMJOB_TEST_PG_URL.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pytest

from streamjob.catalog import CheckpointInfo, JobInfo
from streamjob.exceptions import (
    ObjectExistsError,
    ObjectNotFoundError,
)

from .catalog_helpers import COLS, T0, _ckpt, _count, _job

pytestmark = pytest.mark.component


# ------------------------------------------------------------------------- jobs


def test_jobs_crud(catalog):
    catalog.create_stream("default", "s", COLS, {})
    catalog.create_table("default", "t", COLS, {})
    deps = [("stream", "default", "s", "source"), ("table", "default", "t", "sink")]
    assert catalog.create_job("default", "zeta", "insert into t select * from s", {"a": "1"}, deps + deps[:1])
    assert _job(catalog, "alpha")
    assert _job(catalog, "beta", db="aaa")

    job = catalog.get_job("default", "zeta")
    assert isinstance(job, JobInfo)
    assert job.qualified_name == "default.zeta"
    assert len(job.uid) == 32 and int(job.uid, 16) >= 0
    assert job.query == "insert into t select * from s"
    assert job.properties == {"a": "1"}
    assert (job.desired_state, job.status, job.attempts, job.last_error) == ("STOPPED", "CREATED", 0, None)
    assert job.dependencies == tuple(deps)  # duplicates dropped, order kept
    assert job.created_at == job.updated_at and job.created_at.utcoffset() == timedelta(0)
    assert catalog.get_job_by_uid(job.uid) == job
    assert catalog.get_job("default", "nope") is None
    assert catalog.require_job("default", "zeta") == job
    with pytest.raises(ObjectNotFoundError, match=r"^streamjob default.x does not exist$"):
        catalog.require_job("default", "x")

    assert [j.qualified_name for j in catalog.list_jobs()] == ["aaa.beta", "default.alpha", "default.zeta"]
    assert [j.name for j in catalog.list_jobs("default")] == ["alpha", "zeta"]
    assert catalog.list_jobs()[2].dependencies == tuple(deps)

    with pytest.raises(ObjectExistsError, match="streamjob default.zeta already exists"):
        _job(catalog, "zeta")
    assert _job(catalog, "zeta", if_not_exists=True) is False
    assert catalog.get_job("default", "zeta").uid == job.uid

    time.sleep(0.01)
    updated = catalog.update_job("default", "zeta", status="FAILED", last_error="boom", attempts=3)
    assert (updated.status, updated.last_error, updated.attempts) == ("FAILED", "boom", 3)
    assert updated.updated_at > job.updated_at
    assert updated.desired_state == "STOPPED" and updated.properties == {"a": "1"}
    # last_error unchanged unless given; None clears it
    again = catalog.update_job("default", "zeta", desired_state="RUNNING", properties={"b": 2})
    assert (again.desired_state, again.last_error, again.properties) == ("RUNNING", "boom", {"b": 2})
    cleared = catalog.update_job("default", "zeta", status="RUNNING", last_error=None, attempts=0)
    assert (cleared.status, cleared.last_error, cleared.attempts) == ("RUNNING", None, 0)
    assert catalog.get_job("default", "zeta") == cleared

    with pytest.raises(ValueError, match="job status"):
        catalog.update_job("default", "zeta", status="BOGUS")
    with pytest.raises(ValueError, match="desired state"):
        catalog.update_job("default", "zeta", desired_state="PAUSED")
    with pytest.raises(ObjectNotFoundError, match="streamjob default.nope does not exist"):
        catalog.update_job("default", "nope", status="RUNNING")
    # guarded by uid: a stale writer's update is ignored
    assert catalog.update_job("default", "zeta", status="STOPPED", uid="0" * 32) is None
    assert catalog.update_job("default", "nope", status="STOPPED", uid=job.uid) is None
    assert catalog.get_job("default", "zeta").status == "RUNNING"
    assert catalog.update_job("default", "zeta", status="STOPPED", uid=job.uid).status == "STOPPED"


def test_drop_job_cascades_runs_checkpoints_and_dependencies(catalog, catalog_url):
    catalog.create_stream("default", "s", COLS, {})
    _job(catalog, "j", ("stream", "default", "s", "source"))
    _job(catalog, "keep", ("stream", "default", "s", "source"))
    job = catalog.get_job("default", "j")
    keep = catalog.get_job("default", "keep")
    for uid in (job.uid, keep.uid):
        run = catalog.start_run(uid, 0)
        catalog.end_run(run, "FAILED", "boom")
        catalog.start_run(uid, 1)
        for cid in range(3):
            _ckpt(catalog, uid, cid)

    dropped = catalog.drop_job("default", "j")
    assert dropped == job
    assert catalog.get_job("default", "j") is None
    assert catalog.list_runs(job.uid) == []
    assert catalog.list_checkpoints(job.uid) == []
    assert _count(catalog_url, "runs") == 2
    assert _count(catalog_url, "checkpoints") == 3
    assert _count(catalog_url, "job_dependencies") == 1
    assert len(catalog.list_runs(keep.uid)) == 2
    assert len(catalog.list_checkpoints(keep.uid)) == 3

    with pytest.raises(ObjectNotFoundError, match="streamjob default.j does not exist"):
        catalog.drop_job("default", "j")
    assert catalog.drop_job("default", "j", if_exists=True) is None


def test_uid_changes_on_recreate_and_stale_writes_are_ignored(catalog):
    _job(catalog, "j")
    old = catalog.get_job("default", "j")
    catalog.drop_job("default", "j")
    _job(catalog, "j")
    new = catalog.get_job("default", "j")
    assert new.uid != old.uid
    assert catalog.get_job_by_uid(old.uid) is None

    # the dropped incarnation's late events go nowhere
    assert catalog.start_run(old.uid, 0) is None
    _ckpt(catalog, old.uid, 7)
    assert catalog.truncate_checkpoints(old.uid, -1) == 0
    catalog.end_run(None, "STOPPED")
    catalog.end_run(987654, "STOPPED")
    assert catalog.list_runs(new.uid) == []
    assert catalog.list_checkpoints(new.uid) == []
    assert catalog.latest_checkpoint(new.uid) is None
    assert catalog.list_runs(old.uid) == [] and catalog.list_checkpoints(old.uid) == []


# ------------------------------------------------------------------------- runs


def test_runs(catalog):
    _job(catalog, "j")
    uid = catalog.get_job("default", "j").uid
    first = catalog.start_run(uid, 0)
    catalog.end_run(first, "FAILED", "java.lang.OutOfMemoryError")
    second = catalog.start_run(uid, 1)
    runs = catalog.list_runs(uid)
    assert [r.id for r in runs] == [first, second]
    assert (runs[0].attempt, runs[0].status, runs[0].cause) == (0, "FAILED", "java.lang.OutOfMemoryError")
    assert runs[0].ended_at is not None and runs[0].ended_at >= runs[0].started_at
    assert runs[0].started_at.utcoffset() == timedelta(0)
    assert (runs[1].status, runs[1].ended_at, runs[1].job_uid) == ("RUNNING", None, uid)

    catalog.end_run(second, "STOPPED", "STOP STREAMJOB")
    catalog.end_run(second, "FAILED", "late duplicate")  # already ended: left alone
    last = catalog.list_runs(uid)[1]
    assert (last.status, last.cause) == ("STOPPED", "STOP STREAMJOB")
    with pytest.raises(ValueError):
        catalog.end_run(second, "RUNNING")


# ------------------------------------------------------------------ checkpoints


def test_checkpoint_retention_keeps_the_highest_ids(catalog, catalog_url):
    _job(catalog, "j")
    _job(catalog, "other")
    uid = catalog.get_job("default", "j").uid
    other = catalog.get_job("default", "other").uid
    _ckpt(catalog, other, 0)
    for cid in range(20):
        _ckpt(catalog, uid, cid, retained=5)
    cps = catalog.list_checkpoints(uid)
    assert [c.checkpoint_id for c in cps] == [15, 16, 17, 18, 19]
    assert _count(catalog_url, "checkpoints") == 6  # the other job's checkpoint stays
    c = cps[-1]
    assert isinstance(c, CheckpointInfo)
    assert c == CheckpointInfo(
        job_uid=uid,
        checkpoint_id=19,
        started_at=T0 + timedelta(seconds=19),
        ended_at=T0 + timedelta(seconds=19, milliseconds=250),
        duration_ms=250,
        source_offsets={"flights": {"0": 190, "1": 133}},
        input_rows=57,
        state_rows=19,
        status="COMPLETED",
        fingerprint="fp1",
    )
    assert c.started_at.tzinfo is not None
    assert catalog.latest_checkpoint(uid) == c
    # a smaller retention applies at the next record
    _ckpt(catalog, uid, 20, retained=2)
    assert [c.checkpoint_id for c in catalog.list_checkpoints(uid)] == [19, 20]


def test_checkpoint_recorded_twice_is_upserted(catalog):
    _job(catalog, "j")
    uid = catalog.get_job("default", "j").uid
    for cid in range(3):
        _ckpt(catalog, uid, cid)
    _ckpt(catalog, uid, 1)  # replayed batch: no error, no duplicate
    _ckpt(catalog, uid, 2, status="EXPIRED", ended_at=None, duration_ms=None)
    _ckpt(catalog, uid, 2, status="LATE", input_rows=99)
    cps = catalog.list_checkpoints(uid)
    assert [c.checkpoint_id for c in cps] == [0, 1, 2]
    assert (cps[2].status, cps[2].input_rows, cps[2].duration_ms) == ("LATE", 99, 250)
    with pytest.raises(ValueError, match="checkpoint status"):
        _ckpt(catalog, uid, 3, status="DONE")
    with pytest.raises(ValueError, match="retained"):
        _ckpt(catalog, uid, 3, retained=0)


def test_naive_datetimes_are_taken_as_utc(catalog):
    _job(catalog, "j")
    uid = catalog.get_job("default", "j").uid
    naive = datetime(2024, 1, 2, 3, 4, 5, 600000)
    other_tz = datetime(2024, 1, 2, 5, 4, 5, 600000, tzinfo=timezone(timedelta(hours=2)))
    catalog.record_checkpoint(
        uid, 0, started_at=naive, ended_at=other_tz, duration_ms=0,
        source_offsets=None, input_rows=0, retained=5,
    )
    c = catalog.latest_checkpoint(uid)
    assert c.started_at == naive.replace(tzinfo=timezone.utc) == c.ended_at
    assert c.ended_at.tzinfo == timezone.utc
    assert c.source_offsets is None and c.state_rows is None


def test_truncate_checkpoints(catalog):
    _job(catalog, "j")
    uid = catalog.get_job("default", "j").uid
    for cid in range(6):
        _ckpt(catalog, uid, cid, retained=10)
    assert catalog.truncate_checkpoints(uid, after=3) == 2
    assert catalog.latest_checkpoint(uid).checkpoint_id == 3
    assert catalog.truncate_checkpoints(uid, after=-1) == 4
    assert catalog.list_checkpoints(uid) == []
