"""The main job end to end: flights.sql on the real flights through the real broker and
Spark, via the ``streamjob`` command, checked row by row against the batch result."""

from __future__ import annotations


import pytest

from .conftest import FLIGHTS_SQL
from .results import assert_matches_batch

pytestmark = pytest.mark.system

JOBS = ("default.carrier_delays_job", "default.late_flights_job")


def _checkpoint_ids(home, job: str, log: str = "commits") -> list[int]:
    ck = home / "checkpoints" / "default" / job
    return sorted(int(p.name) for p in (ck / log).iterdir() if p.name.isdigit()) \
        if (ck / log).is_dir() else []


@pytest.mark.slow  # 50-60 s of a worker: the whole flights twice; `make demo` runs the same job
def test_run_until_idle_matches_batch_and_keeps_five_checkpoints(cli, expected):
    # 50,000 records per checkpoint: 7 checkpoints per job over 336,776 flights (enough to
    # purge 2 of them; each micro-batch costs CPU that the parallel test run shares)
    res = cli.run("run", str(FLIGHTS_SQL), "--until-idle", MAX_RECORDS_PER_BATCH=50000,
                  CHECKPOINT_INTERVAL=0)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "caught up" in res.stdout
    assert "Traceback" not in res.stderr
    assert_matches_batch(cli.home, expected)

    jobs = {j["job"]: j for j in cli.json("list")}
    assert set(jobs) == set(JOBS)
    for name in JOBS:
        assert jobs[name]["guarantee"] == "exactly-once"
        assert jobs[name]["last_checkpoint"] >= 6
        cps = cli.json("checkpoints", name)
        ids = [c["checkpoint_id"] for c in cps]
        # the last five, in the catalog ...
        assert len(ids) == 5 and ids == list(range(ids[-1] - 4, ids[-1] + 1))
        assert cps[-1]["source_offsets"]["flights"] == {"0": 168388, "1": 168388}
        assert sum(c["input_rows"] for c in cps) > 0
        # ... and on disk (Spark's minBatchesToRetain = morphling.checkpoint.retained)
        on_disk = _checkpoint_ids(cli.home, name.split(".")[1])
        assert on_disk == ids, f"{name}: commit log holds {on_disk}, catalog {ids}"
        # the offset log also keeps where the oldest retained checkpoint started
        offsets = _checkpoint_ids(cli.home, name.split(".")[1], "offsets")
        assert offsets == [ids[0] - 1] + ids, f"{name}: offset log holds {offsets}"
    # state versions (the stateful job; version v is the state after checkpoint v - 1):
    # every retained checkpoint can be restored from the files present. That Spark's
    # maintenance thread then purges what no retained checkpoint needs happens in the
    # background; test_latency waits for it while a job runs.
    state = cli.home / "checkpoints" / "default" / "carrier_delays_job" / "state" / "0"
    ids = [c["checkpoint_id"] for c in cli.json("checkpoints", JOBS[0])]
    for part in (p for p in state.iterdir() if p.name.isdigit()):  # not _metadata
        files = {p.name for p in part.iterdir()}
        deltas = {int(n.split(".")[0]) for n in files if n.endswith(".delta")}
        snapshots = {int(n.split(".")[0]) for n in files if n.endswith(".snapshot")}
        for cp in ids:
            assert _restorable(cp + 1, deltas, snapshots), \
                f"state partition {part.name}: checkpoint {cp} not restorable from {sorted(deltas | snapshots)}"


def _restorable(version: int, deltas: set[int], snapshots: set[int]) -> bool:
    """Whether state ``version`` can be rebuilt as Spark's HDFS-backed state store does:
    the newest snapshot at or below it (or the empty version 0) plus every delta after."""
    base = max((s for s in snapshots if s <= version), default=0)
    return all(v in deltas for v in range(base + 1, version + 1))


@pytest.mark.slow  # resume is also in the crash-resume tests
def test_second_run_resumes_and_drop_purges(cli, expected):
    first = cli.run("run", str(FLIGHTS_SQL), "--until-idle")
    assert first.returncode == 0, first.stdout + first.stderr
    before = {j["job"]: j["last_checkpoint"] for j in cli.json("list")}
    # the state a SIGKILL between Spark's commit marker and the catalog row leaves: the
    # newest checkpoint is committed on disk but not recorded; the next start records it
    from streamjob.catalog import Catalog

    cat = Catalog(f"sqlite:///{cli.home}/catalog.db")
    job = cat.get_job("default", "late_flights_job")
    cat.truncate_checkpoints(job.uid, after=before["default.late_flights_job"] - 1)
    cat.close()

    again = cli.run("run", str(FLIGHTS_SQL), "--until-idle", timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "exists" in again.stdout  # IF NOT EXISTS: the declarations were kept
    after = {j["job"]: j["last_checkpoint"] for j in cli.json("list")}
    assert after == before, "nothing new to read: no new checkpoint, no reprocessing"
    assert "committed but not recorded" in again.stderr
    assert_matches_batch(cli.home, expected)

    ck = cli.home / "checkpoints" / "default" / "late_flights_job"
    assert ck.is_dir()
    res = cli.run("drop", "late_flights_job")
    assert res.returncode == 0, res.stderr
    assert not ck.exists()
    assert (cli.home / "checkpoints" / "default" / "carrier_delays_job").is_dir()
    assert [j["job"] for j in cli.json("list")] == ["default.carrier_delays_job"]
    res = cli.run("checkpoints", "late_flights_job")
    assert res.returncode == 1 and "does not exist" in res.stderr
