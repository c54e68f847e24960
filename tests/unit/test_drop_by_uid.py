"""Issue 28 point 5: DROP acts by the job's uid, never by its name, and a checkpoint
directory without identity (``streamjob.json``) is never deleted. Real SQLite catalog,
real local checkpoint directories written as Spark and the job manager write them. Each
test failed on the main of 2026-11-27 (0761648)."""

from __future__ import annotations

import logging
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace

import pytest

from streamjob.catalog import Catalog
from streamjob.checkpoint import identity
from streamjob.exceptions import CheckpointError
from streamjob.executor import Executor
from streamjob.grammar import parse_script
from streamjob.home import Home

pytestmark = pytest.mark.unit

SETUP = """
CREATE STREAM s (k STRING, v DOUBLE) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="127.0.0.1:1");
CREATE TABLE totals (k STRING, total DOUBLE) STORED AS PARQUET;
"""
JOB = 'CREATE STREAMJOB j AS ("insert into totals select k, v from s")'


def run(ex: Executor, script: str):
    results = [ex.execute(stmt) for stmt in parse_script(script)]
    return results[-1] if results else None


@pytest.fixture
def ex(tmp_path):
    home = Home.open(tmp_path / "home")
    executor = Executor(Catalog(f"sqlite:///{tmp_path}/catalog.db"), home)
    run(executor, SETUP)
    return executor


def _logs(ckdir: Path, ids=(0, 1)) -> Path:
    """Spark's offset and commit logs of batches ``ids`` in ``ckdir``."""
    for log in ("offsets", "commits"):
        (ckdir / log).mkdir(parents=True, exist_ok=True)
        for i in ids:
            (ckdir / log / str(i)).write_text("v1\n{}\n{}\n")
    return ckdir


def _started(ex, name: str = "j") -> Path:
    """The job's checkpoint directory as its first start leaves it: an identity of its
    uid (identity.prepare, as the job manager runs it) and Spark's logs."""
    job = ex.catalog.get_job("default", name)
    ckdir = Path(ex.home.checkpoint_dir("default", name))
    identity.prepare(str(ckdir), job, None)
    return _logs(ckdir)


def test_drop_leaves_a_directory_without_identity_and_says_so(ex):
    run(ex, JOB)
    ckdir = _logs(Path(ex.home.checkpoint_dir("default", "j")))  # no streamjob.json
    msg = run(ex, "DROP STREAMJOB j").message
    assert (ckdir / "commits" / "1").exists(), "an identity-less directory was deleted"
    assert msg.startswith("streamjob default.j dropped; its checkpoint records were purged\n")
    warning = msg.splitlines()[-1]
    assert warning.startswith("warning: checkpoint directory") and str(ckdir) in warning
    assert "no identity (streamjob.json)" in warning
    assert ex.catalog.get_job("default", "j") is None


def test_drop_deletes_the_directory_its_identity_names(ex):
    run(ex, JOB)
    ckdir = _started(ex)
    assert run(ex, "DROP STREAMJOB j").message == (
        "streamjob default.j dropped; its checkpoints were purged")
    assert not ckdir.exists()


def test_a_late_drop_of_the_old_incarnation_spares_the_new_one(ex, monkeypatch):
    """DROP j (uid A) waits for the job manager to stop it; meanwhile another client
    drops j and creates it again (uid B), which starts and checkpoints. A's DROP then
    goes on: B's catalog row, checkpoint records and directory stay (on main, A's DROP
    deleted the job row of B by name)."""
    run(ex, JOB)
    old = ex.catalog.get_job("default", "j")
    _started(ex)
    other = Executor(ex.catalog, ex.home)  # the other client, on the same catalog
    seen = SimpleNamespace(new=None)

    def meanwhile(job):
        run(other, "DROP STREAMJOB j")
        run(other, JOB)
        seen.new = ex.catalog.get_job("default", "j")
        _started(other)
        now = datetime.now(timezone.utc)
        ex.catalog.record_checkpoint(seen.new.uid, 1, started_at=now, ended_at=now,
                                     duration_ms=1, source_offsets={}, input_rows=1,
                                     retained=5)
        return None  # stopped

    monkeypatch.setattr(ex, "_await_stopped", meanwhile)
    msg = run(ex, "DROP STREAMJOB j").message
    assert seen.new is not None and seen.new.uid != old.uid
    now = ex.catalog.get_job("default", "j")
    assert now is not None and now.uid == seen.new.uid, "the new incarnation was dropped"
    assert [c.checkpoint_id for c in ex.catalog.list_checkpoints(now.uid)] == [1]
    ckdir = Path(ex.home.checkpoint_dir("default", "j"))
    assert identity.read(str(ckdir)).job_uid == now.uid and (ckdir / "commits" / "1").exists()
    assert "a new streamjob default.j was created meanwhile and stays" in msg


def test_catalog_drop_by_uid_leaves_another_incarnation(ex):
    run(ex, JOB)
    old = ex.catalog.get_job("default", "j")
    run(ex, "DROP STREAMJOB j")
    run(ex, JOB)
    assert ex.catalog.drop_job("default", "j", if_exists=True, uid=old.uid) is None
    assert ex.catalog.get_job("default", "j") is not None


def test_start_over_refuses_to_delete_a_directory_without_identity(ex):
    run(ex, JOB)
    ckdir = _logs(Path(ex.home.checkpoint_dir("default", "j")))
    with pytest.raises(CheckpointError, match=r"has no identity \(streamjob.json\)") as info:
        run(ex, "START STREAMJOB j FROM EARLIEST")
    assert "adopts it" in info.value.message and info.value.line == 1
    assert (ckdir / "commits" / "1").exists()


@pytest.mark.parametrize("owner, deleted", [("mine", True), ("other", False), (None, False)])
def test_purge_owned_deletes_only_what_names_the_uid(tmp_path, owner, deleted):
    root = tmp_path / "ck"
    ckdir = _logs(root / "default" / "j")
    if owner is not None:
        identity._write(str(ckdir), identity.Identity("A" if owner == "mine" else "B", "e"))
    purged = identity.purge_owned(str(ckdir), str(root), "A")
    assert purged.deleted is deleted and ckdir.exists() is not deleted
    assert bool(purged.kept) is not deleted
    empty = root / "default" / "empty"
    empty.mkdir()
    assert identity.purge_owned(str(empty), str(root), "A").kept == ""
    assert not empty.exists()  # an empty directory holds nothing anyone owns


def test_the_old_incarnations_retention_never_trims_the_new_ones_logs(tmp_path, caplog):
    """A runner of the dropped incarnation still finishing its last batch records a
    checkpoint: its retention must not trim the directory that a new incarnation of
    the name now owns (on main it trimmed by name)."""
    import datetime as dt

    from streamjob.checkpoint.recorder import CheckpointRecorder, CheckpointTracker

    catalog = Catalog(f"sqlite:///{tmp_path / 'catalog.db'}")
    catalog.create_job("default", "j", "insert into t select * from s", {}, [])
    old = catalog.get_job("default", "j")
    ckdir = _logs(tmp_path / "ck", ids=range(6))
    identity._write(str(ckdir), identity.Identity("the-new-uid", "e"))
    rec = CheckpointRecorder(catalog, old.uid, "default.j", str(ckdir), 1,
                             CheckpointTracker(), interval_ms=0)
    at = dt.datetime(2026, 11, 27, tzinfo=dt.timezone.utc).isoformat().replace("+00:00", "Z")
    progress = SimpleNamespace(batchId=5, timestamp=at, batchDuration=10, numInputRows=1,
                               stateOperators=[], observedMetrics={}, sources=[])
    with caplog.at_level(logging.WARNING):
        rec.record(progress)
    assert sorted(int(p.name) for p in (ckdir / "commits").iterdir()) == list(range(6))
    assert "belongs to job uid the-new-uid" in caplog.text


def test_start_from_checkpoint_never_truncates_another_incarnations_directory(ex):
    run(ex, JOB)
    job = ex.catalog.get_job("default", "j")
    ckdir = _logs(Path(ex.home.checkpoint_dir("default", "j")), ids=range(4))
    identity._write(str(ckdir), identity.Identity("another-uid", "e"))
    now = datetime.now(timezone.utc)
    for i in range(4):
        ex.catalog.record_checkpoint(job.uid, i, started_at=now, ended_at=now, duration_ms=1,
                                     source_offsets={}, input_rows=1, retained=5)
    with pytest.raises(CheckpointError, match="belongs to another job"):
        run(ex, "START STREAMJOB j FROM CHECKPOINT 1")
    assert sorted(int(p.name) for p in (ckdir / "commits").iterdir()) == [0, 1, 2, 3]
