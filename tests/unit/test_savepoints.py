"""Savepoints (issue 30) through the executor against a real SQLite catalog and checkpoint
directories laid out as Spark writes them (no Spark: tests/integration/test_savepoints.py
runs a real job)."""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from streamjob.catalog import Catalog
from streamjob.catalog.records import Role
from streamjob.checkpoint import savepoint
from streamjob.checkpoint.fingerprint import FILE_NAME as FP_FILE, Fingerprint
from streamjob.exceptions import (AccessDeniedError, ChangedLogic, CheckpointError, JobError,
                                  ObjectExistsError)
from streamjob.executor import Executor
from streamjob.grammar import parse_script
from streamjob.home import Home

pytestmark = pytest.mark.unit

T0 = datetime(2026, 11, 27, 10, 0, 0, tzinfo=timezone.utc)


@pytest.fixture
def ex(tmp_path):
    home = Home.open(tmp_path / "home")
    executor = Executor(Catalog(f"sqlite:///{tmp_path}/catalog.db"), home, principal="local:me")
    run(executor, f"""
        CREATE STREAM s (k STRING, v DOUBLE) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092");
        CREATE TABLE totals (k STRING, total DOUBLE) TBLPROPERTIES ("connector"="sql",
          "url"="sqlite:///{tmp_path}/sink.db", "primary.key"="k");
        CREATE STREAMJOB j AS ("insert into totals select k, sum(v) from s group by k")
          JOBPROPERTIES ("morphling.checkpoint.retained"="3");""")
    return executor


def run(executor: Executor, script: str):
    results = [executor.execute(stmt) for stmt in parse_script(script)]
    return results[-1] if results else None


def checkpoints(ex, ids, snapshot_every=4):
    """Checkpoints ``ids`` of job j as streamjob and Spark lay them out (its identity, (offsets and commits, state
    versions of one operator's two partitions: a delta per version, a snapshot every
    ``snapshot_every``, checksums, operator metadata), recorded in the catalog
    (retention 3) with batch i ending at T0 + i s. Returns the directory."""
    from streamjob.checkpoint import identity

    job = ex.catalog.get_job("default", "j")
    ckdir = Path(ex.home.checkpoint_dir("default", "j"))
    identity.prepare(str(ckdir), job, None)  # a first start's identity (a new epoch)
    (ckdir / "metadata").write_text('{"id":"q"}')
    (ckdir / "state/0/_metadata").mkdir(parents=True, exist_ok=True)
    (ckdir / "state/0/_metadata/metadata").write_text("ops")
    for i in ids:
        for log in ("offsets", "commits"):
            (ckdir / log).mkdir(exist_ok=True)
            (ckdir / log / str(i)).write_text(f"v1\n{{}}\n{{\"t\":{{\"0\":{i * 10}}}}}")
            (ckdir / log / f".{i}.crc").write_text("crc")
        for part in ("0", "1"):
            d = ckdir / "state/0" / part
            d.mkdir(parents=True, exist_ok=True)
            (d / f"{i + 1}.delta").write_text(f"d{i + 1}")
            (d / f".{i + 1}.delta.crc").write_text("crc")
            if (i + 1) % snapshot_every == 0:
                (d / f"{i + 1}.snapshot").write_text(f"s{i + 1}")
        at = T0 + timedelta(seconds=i)
        ex.catalog.record_checkpoint(job.uid, i, started_at=at, ended_at=at, duration_ms=0,
                                     source_offsets={"t": {"0": i * 10}}, input_rows=1,
                                     fingerprint="fp", retained=3)
    return ckdir


def test_a_savepoint_keeps_only_what_its_restore_needs_and_outlives_retention(ex):
    ckdir = checkpoints(ex, range(0, 10))  # retained: 7, 8, 9
    msg = run(ex, "CREATE SAVEPOINT before_fix FOR STREAMJOB j").message
    assert msg.startswith("savepoint before_fix of streamjob default.j taken: checkpoint 9 "
                          "of 2026-11-27 10:00:09 UTC, in ")
    folder = Path(savepoint.folder(str(ckdir), "before_fix"))
    assert folder.parent == ckdir.parent / "j.savepoints"
    kept = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    # batch 9 -> state version 10: the snapshot at 8 and the delta after it, per partition
    assert kept == ["commits/.9.crc", "commits/9", "metadata", "offsets/.8.crc",
                    "offsets/.9.crc", "offsets/8", "offsets/9", "savepoint.json",
                    "state/0/0/.10.delta.crc", "state/0/0/.9.delta.crc", "state/0/0/10.delta",
                    "state/0/0/8.snapshot", "state/0/0/9.delta",
                    "state/0/1/.10.delta.crc", "state/0/1/.9.delta.crc", "state/0/1/10.delta",
                    "state/0/1/8.snapshot", "state/0/1/9.delta", "state/0/_metadata/metadata"]
    # ten later checkpoints (retention 3) never reach it
    job = ex.catalog.get_job("default", "j")
    checkpoints(ex, range(10, 20))
    assert [c.checkpoint_id for c in ex.catalog.list_checkpoints(job.uid)] == [17, 18, 19]
    shown = run(ex, "SHOW SAVEPOINTS FOR STREAMJOB j")
    assert [r[:5] for r in shown.rows] == [("default.j", "before_fix", 9, "2026-11-27 10:00:09",
                                            shown.rows[0][4])]
    sp = shown.to_json()[0]
    assert (sp["job_uid"], sp["checkpoint_id"], sp["fingerprint"], sp["source_offsets"],
            sp["owner"]) == (job.uid, 9, "fp", {"t": {"0": 90}}, "local:me")
    assert savepoint.missing(str(folder)) == []
    with pytest.raises(ObjectExistsError, match="already has a savepoint before_fix") as info:
        run(ex, "\nCREATE SAVEPOINT before_fix FOR STREAMJOB j")
    assert (info.value.line, info.value.column) == (2, 18)
    assert run(ex, "SHOW SAVEPOINTS").rows == shown.rows


def test_start_from_savepoint_restores_its_files_under_a_new_epoch(ex):
    from streamjob.checkpoint import identity

    ckdir = checkpoints(ex, range(0, 6))
    run(ex, "CREATE SAVEPOINT sp FOR STREAMJOB j")
    before = identity.read(str(ckdir))
    checkpoints(ex, range(6, 16))
    msg = run(ex, "START STREAMJOB j FROM SAVEPOINT sp").message
    assert "from savepoint sp (checkpoint 5); checkpoint epoch" in msg
    after = identity.read(str(ckdir))
    assert after.job_uid == before.job_uid and after.epoch != before.epoch
    assert sorted(p.name for p in (ckdir / "offsets").iterdir() if p.name.isdigit()) == ["4", "5"]
    assert sorted(p.name for p in (ckdir / "commits").iterdir() if p.name.isdigit()) == ["5"]
    assert sorted(p.name for p in (ckdir / "state/0/0").iterdir()
                  if not p.name.startswith(".")) == ["4.snapshot", "5.delta", "6.delta"]
    job = ex.catalog.get_job("default", "j")
    assert [(c.checkpoint_id, c.source_offsets) for c in
            ex.catalog.list_checkpoints(job.uid)] == [(5, {"t": {"0": 50}})]
    # restoring again is refused while it is meant to run
    ex.catalog.update_job("default", "j", status="RUNNING", uid=job.uid)
    with pytest.raises(JobError, match="is running; STOP it before starting it from savepoint sp"):
        run(ex, "START STREAMJOB j FROM SAVEPOINT sp")
    ex.catalog.update_job("default", "j", status="STOPPED", desired_state="STOPPED", uid=job.uid)
    with pytest.raises(JobError, match="has no savepoint nope; it has: sp") as info:
        run(ex, "START STREAMJOB j FROM SAVEPOINT nope")
    assert info.value.column == 34


def test_a_savepoint_whose_files_are_missing_is_refused_with_its_path(ex):
    ckdir = checkpoints(ex, range(0, 4))
    run(ex, "CREATE SAVEPOINT sp FOR STREAMJOB j")
    gone = Path(savepoint.folder(str(ckdir), "sp")) / "state/0/1/4.snapshot"
    gone.unlink()
    with pytest.raises(CheckpointError, match=f"savepoint sp of streamjob default.j cannot be "
                                              f"restored: {gone} is missing"):
        run(ex, "START STREAMJOB j FROM SAVEPOINT sp")
    assert (ckdir / "commits" / "3").exists()  # nothing was replaced
    # its whole folder deleted: the folder is named, and how to forget the savepoint
    folder = savepoint.folder(str(ckdir), "sp")
    shutil.rmtree(folder)
    with pytest.raises(CheckpointError, match=f"savepoint sp of streamjob default.j cannot be "
                                              f"restored: its folder {folder} is missing or "
                                              "empty; DROP SAVEPOINT sp FOR STREAMJOB "
                                              "default.j forgets it"):
        run(ex, "START STREAMJOB j FROM SAVEPOINT sp")
    assert (ckdir / "commits" / "3").exists()
    run(ex, "DROP SAVEPOINT sp FOR STREAMJOB j")
    assert run(ex, "SHOW SAVEPOINTS").rows == []


def test_restoring_a_savepoint_into_a_changed_query_is_refused(ex):
    ckdir = checkpoints(ex, range(0, 4))
    (ckdir / FP_FILE).write_text(json.dumps(asdict(Fingerprint(
        sources=("default.s",), query="another", schemas="x", sink="y", stateful=True))))
    run(ex, "CREATE SAVEPOINT sp FOR STREAMJOB j")
    with pytest.raises(ChangedLogic, match="its query changed"):
        run(ex, "START STREAMJOB j FROM SAVEPOINT sp")


def test_from_checkpoint_at_picks_the_newest_at_or_before_and_names_the_oldest(ex):
    checkpoints(ex, range(0, 4))
    run(ex, "CREATE SAVEPOINT early FOR STREAMJOB j")  # checkpoint 3, of 10:00:03
    checkpoints(ex, range(4, 10))  # retained: 7, 8, 9 (10:00:07 .. 10:00:09)
    with pytest.raises(JobError) as info:
        run(ex, "START STREAMJOB j FROM CHECKPOINT AT '2026-11-27 10:00:02'")
    assert info.value.message == (
        "no retained checkpoint or savepoint of streamjob default.j is at or before "
        "2026-11-27 10:00:02 UTC: the oldest is savepoint early (checkpoint 3) of "
        "2026-11-27 10:00:03 UTC")
    assert (info.value.line, info.value.column) == (1, 38)
    msg = run(ex, "START STREAMJOB j FROM CHECKPOINT AT '2026-11-27 10:00:08.5'").message
    assert "from checkpoint 8 (checkpoints 9 removed); checkpoint epoch " in msg
    assert msg.endswith(" (of 2026-11-27 10:00:08 UTC)")
    job = ex.catalog.get_job("default", "j")
    ex.catalog.update_job("default", "j", desired_state="STOPPED", uid=job.uid)
    msg = run(ex, "START STREAMJOB j FROM CHECKPOINT AT '2026-11-27 10:00:06'").message
    assert "from savepoint early (checkpoint 3); checkpoint epoch" in msg


def test_a_viewer_may_show_savepoints_but_not_make_drop_or_restore_them(ex):
    checkpoints(ex, range(0, 3))
    run(ex, "CREATE SAVEPOINT sp FOR STREAMJOB j")
    viewer = Executor(ex.catalog, ex.home, role=Role.VIEWER)
    assert [r[1] for r in run(viewer, "SHOW SAVEPOINTS").rows] == ["sp"]
    for sql in ("CREATE SAVEPOINT sp2 FOR STREAMJOB j", "DROP SAVEPOINT sp FOR STREAMJOB j",
                "START STREAMJOB j FROM SAVEPOINT sp", "STOP STREAMJOB j WITH SAVEPOINT sp2",
                "START STREAMJOB j FROM CHECKPOINT AT '2026-11-27 10:00:02'"):
        with pytest.raises(AccessDeniedError, match="a viewer may only SHOW SAVEPOINTS"):
            run(viewer, sql)
    assert [sp.name for sp in ex.catalog.list_savepoints()] == ["sp"]
    operator = Executor(ex.catalog, ex.home, role=Role.OPERATOR)
    assert "dropped" in run(operator, "DROP SAVEPOINT sp FOR STREAMJOB j").message
    assert ex.catalog.list_savepoints() == []
    assert not Path(savepoint.folder(ex.home.checkpoint_dir("default", "j"), "sp")).exists()


def test_stop_with_savepoint_and_drop_streamjob_removes_them_saying_how_many(ex):
    ckdir = checkpoints(ex, range(0, 3))
    assert "stopped with savepoint one (checkpoint 2, in " in run(
        ex, "STOP STREAMJOB j WITH SAVEPOINT one").message
    run(ex, "CREATE SAVEPOINT two FOR STREAMJOB j")
    assert (ckdir.parent / "j.savepoints" / "two" / "commits" / "2").exists()
    assert "its checkpoints and its 2 savepoints were purged" in run(ex, "DROP STREAMJOB j").message
    assert ex.catalog.list_savepoints() == []
    assert not (ckdir.parent / "j.savepoints").exists()


def test_a_pin_holds_the_trim_and_a_lost_checkpoint_is_retried_with_the_next(tmp_path):
    import time

    from streamjob.catalog.records import CheckpointInfo

    ck = tmp_path / "root/db/j"
    for i in range(0, 6):
        for log in ("offsets", "commits"):
            (ck / log).mkdir(parents=True, exist_ok=True)
            (ck / log / str(i)).write_text("x")
    assert savepoint.pinned(str(ck)) is None
    (ck / savepoint.PIN).write_text(json.dumps({"checkpoint_id": 2, "at": 0}))
    assert savepoint.pinned(str(ck)) is None  # a pin its process left long ago
    # the first newest (3) loses offsets/2 to a trim; the next newest (5) is taken
    (ck / "offsets/2").unlink()
    answers = iter([3, 5])

    def latest():
        return CheckpointInfo(job_uid="u", checkpoint_id=next(answers), started_at=T0,
                              ended_at=T0, duration_ms=0, source_offsets={}, input_rows=0,
                              state_rows=None, status="COMPLETED", fingerprint=None)

    target = str(tmp_path / "root/db/j.savepoints/sp")
    (tmp_path / "root/db/j.savepoints/sp/offsets").mkdir(parents=True)  # a copy killed midway
    (tmp_path / "root/db/j.savepoints/sp/offsets/1").write_text("x")
    info, files = savepoint.take_newest(str(ck), target, latest, "u", "e", str(tmp_path / "root"))
    assert info.checkpoint_id == 5 and files == ["commits/5", "offsets/4", "offsets/5"]
    assert sorted(p.name for p in (Path(target) / "offsets").iterdir()) == ["4", "5"]
    assert not (ck / savepoint.PIN).exists()
    (ck / savepoint.PIN).write_text(json.dumps({"checkpoint_id": 3, "at": time.time()}))
    assert savepoint.pinned(str(ck)) == 3  # the recorder trims nothing it needs


def test_a_whole_copy_killed_before_its_row_is_taken_again_and_anothers_refused(tmp_path):
    # a kill after the manifest and before the catalog row (issue 30 point 5): listed
    # nowhere; this job's leftover is removed and the savepoint taken again; a folder
    # whose manifest names another job is refused with its path
    from streamjob.catalog.records import CheckpointInfo
    from streamjob.exceptions import CheckpointError

    ck = tmp_path / "root/db/j"
    for i in range(0, 3):
        for log in ("offsets", "commits"):
            (ck / log).mkdir(parents=True, exist_ok=True)
            (ck / log / str(i)).write_text("x")

    def latest():
        return CheckpointInfo(job_uid="u", checkpoint_id=2, started_at=T0, ended_at=T0,
                              duration_ms=0, source_offsets={}, input_rows=0,
                              state_rows=None, status="COMPLETED", fingerprint=None)

    target = tmp_path / "root/db/j.savepoints/sp"
    root = str(tmp_path / "root")
    savepoint.take(str(ck), str(target), 1, "u", "e")  # whole, of checkpoint 1, no row
    info, files = savepoint.take_newest(str(ck), str(target), latest, "u", "e", root)
    assert info.checkpoint_id == 2 and files == ["commits/2", "offsets/1", "offsets/2"]
    assert json.loads((target / savepoint.MANIFEST).read_text())["checkpoint_id"] == 2
    with pytest.raises(CheckpointError, match=f"savepoint folder {target} exists already"):
        savepoint.take_newest(str(ck), str(target), latest, "another", "e", root)
    assert savepoint.missing(str(target)) == []  # the other job's folder is untouched


def test_a_restore_killed_between_its_renames_is_run_again(ex):
    import shutil

    ckdir = checkpoints(ex, range(0, 4))
    run(ex, "CREATE SAVEPOINT sp FOR STREAMJOB j")
    checkpoints(ex, range(4, 8))
    # killed after the old directory moved aside and before the restored one moved in
    shutil.copytree(ckdir, str(ckdir) + ".restoring")
    ckdir.rename(str(ckdir) + ".replaced")
    assert "from savepoint sp (checkpoint 3)" in run(ex, "START STREAMJOB j FROM SAVEPOINT sp").message
    assert sorted(p.name for p in ckdir.parent.iterdir()) == ["j", "j.savepoints"]
    assert sorted(p.name for p in (ckdir / "commits").iterdir() if p.name.isdigit()) == ["3"]


def test_a_dry_run_checks_from_checkpoint_at_without_contacting_another_backend(ex):
    from streamjob.client.check import scratch_catalog

    run(ex, 'ALTER STREAMJOB j SET JOBPROPERTIES ("morphling.checkpoint.backend"="zookeeper")')
    dry = Executor(scratch_catalog(ex.catalog), ex.home, dry_run=True)
    assert "(not checked: its checkpoints are recorded in zookeeper)" in run(
        dry, "START STREAMJOB j FROM CHECKPOINT AT '2026-11-27 10:00:00'").message
