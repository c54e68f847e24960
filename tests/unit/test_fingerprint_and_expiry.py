"""Checkpoint fingerprints (changed logic refused) and checkpoint expiry, without Spark:
real plans from a SQLite catalog, real checkpoint directories on disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from streamjob.catalog import Catalog
from streamjob.checkpoint import fingerprint
from streamjob.checkpoint.expiry import ExpiryWatch, expiry_message
from streamjob.exceptions import JobError
from streamjob.executor import Executor
from streamjob.grammar import parse_script
from streamjob.home import Home
from streamjob.planner.plan import plan_job

pytestmark = pytest.mark.unit

SETUP = """
CREATE STREAM s (k STRING, v DOUBLE) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092");
CREATE STREAM s2 (k STRING, v DOUBLE) TBLPROPERTIES ("topic"="t2", "kafka.broker.list"="h:9092");
CREATE TABLE totals (k STRING, total DOUBLE)
  TBLPROPERTIES ("connector"="sql", "url"="sqlite:////tmp/x.db", "primary.key"="k");
CREATE TABLE copy (k STRING, v DOUBLE) STORED AS PARQUET;
"""


@pytest.fixture
def env(tmp_path):
    home = Home.open(tmp_path / "home")
    catalog = Catalog(home.catalog_url)
    for stmt in parse_script(SETUP):
        Executor(catalog, home).execute(stmt)
    return catalog, home


def plan(env, query):
    catalog, home = env
    return plan_job(catalog, home, "default", "j", query, {}, {})


def checkpointed(tmp_path, plan_):
    ckdir = tmp_path / "ck"
    (ckdir / "offsets").mkdir(parents=True)
    (ckdir / "offsets" / "0").write_text("v1")
    fingerprint.write(str(ckdir), fingerprint.of_plan(plan_))
    return str(ckdir)


AGG = "insert into totals select k, sum(v) from s group by k"


def test_same_job_resumes(env, tmp_path):
    ckdir = checkpointed(tmp_path, plan(env, AGG))
    assert fingerprint.check(ckdir, plan(env, AGG)).stateful


def test_changed_stateful_query_is_refused_saying_what_and_how(env, tmp_path):
    ckdir = checkpointed(tmp_path, plan(env, AGG))
    with pytest.raises(JobError) as info:
        fingerprint.check(ckdir, plan(env, "insert into totals select k, max(v) from s group by k"))
    msg = str(info.value)
    assert "cannot resume from its checkpoints: its query changed" in msg
    assert "DROP STREAMJOB default.j (its checkpoints are purged) and CREATE it again" in msg


def test_changed_sources_are_refused_even_when_stateless(env, tmp_path):
    ckdir = checkpointed(tmp_path, plan(env, "insert into copy select k, v from s"))
    with pytest.raises(JobError, match="its streams changed from default.s to default.s2"):
        fingerprint.check(ckdir, plan(env, "insert into copy select k, v from s2"))


def test_stateless_changes_are_allowed(env, tmp_path):
    ckdir = checkpointed(tmp_path, plan(env, "insert into copy select k, v from s"))
    fp = fingerprint.check(ckdir, plan(env, "insert into copy select k, v * 2 from s where v > 0"))
    assert not fp.stateful


def test_becoming_stateful_is_refused(env, tmp_path):
    ckdir = checkpointed(tmp_path, plan(env, "insert into copy select k, v from s"))
    with pytest.raises(JobError, match="it now keeps state"):
        fingerprint.check(ckdir, plan(env, AGG))


def test_no_checkpoint_or_no_fingerprint_is_fine(env, tmp_path):
    fingerprint.check(str(tmp_path / "empty"), plan(env, AGG))
    ckdir = tmp_path / "old"
    (ckdir / "offsets").mkdir(parents=True)
    (ckdir / "offsets" / "0").write_text("v1")
    fingerprint.check(str(ckdir), plan(env, AGG))  # taken before fingerprints existed
    assert fingerprint.stored(str(ckdir)) is None
    assert len(fingerprint.of_plan(plan(env, AGG)).encode()) < 255


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def _log(ckdir: Path, name: str, batch: int) -> None:
    (ckdir / name).mkdir(parents=True, exist_ok=True)
    (ckdir / name / str(batch)).write_text("v1")


def test_a_checkpoint_in_flight_past_the_timeout_expires_once_and_completes_late(tmp_path):
    clock = Clock()
    watch = ExpiryWatch(str(tmp_path), timeout_ms=2000, clock=clock)
    assert watch.poll() is None  # nothing yet
    _log(tmp_path, "offsets", 0)
    assert watch.poll() is None  # first seen now
    clock.now += 1.5
    assert watch.poll() is None
    clock.now += 1.0
    assert watch.poll() == 0  # 2.5 s > 2 s
    assert watch.poll() is None  # reported once
    _log(tmp_path, "commits", 0)
    assert watch.status_of(0) == "LATE"
    _log(tmp_path, "offsets", 1)
    assert watch.poll() is None
    _log(tmp_path, "commits", 1)
    clock.now += 10
    assert watch.poll() is None and watch.status_of(1) == "COMPLETED"
    assert expiry_message(7, "default.j") == "Checkpoint[7] of job {default.j} expired before completing"


def test_a_micro_batch_between_checkpoints_is_timed_but_only_a_checkpoint_expires(tmp_path):
    """Two cadences (DESIGN §4): a long micro-batch before the checkpoint interval has
    passed is not a checkpoint and is not reported; once the interval passes while it
    still runs, it is the checkpoint in flight, timed from when the watch first saw it."""
    clock = Clock()
    watch = ExpiryWatch(str(tmp_path), timeout_ms=2000, clock=clock)
    _log(tmp_path, "offsets", 3)
    assert watch.poll(due=False) is None
    clock.now += 5
    assert watch.poll(due=False) is None  # 5 s, but no checkpoint is due
    assert watch.poll(due=True) == 3  # the interval has passed: it is the late checkpoint
