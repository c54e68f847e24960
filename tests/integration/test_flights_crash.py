"""The main job SIGKILLed midway and resumed: flights.sql on the real flights through the
real broker and Spark, via the ``streamjob`` command, checked row by row against the
batch result. Apart from test_flights.py so that the slow tier's workers (``--dist
loadfile``: a module stays on one worker) run the two long modules side by side."""

from __future__ import annotations

import signal

import pytest

from .conftest import FLIGHTS_SQL, kill_group, wait_for
from .results import assert_matches_batch, carrier_delays

pytestmark = pytest.mark.system

JOBS = ("default.carrier_delays_job", "default.late_flights_job")


@pytest.mark.slow  # 1-2 min each; `make test` resumes jobs in-process (test_failover, test_latency)
@pytest.mark.parametrize("resume", ["file", "server"])
def test_crash_midway_then_resume_gives_exact_result(cli, expected, resume):
    """SIGKILL of the whole process; then the same file runs again, or the job manager
    (`streamjob server`) starts: every job that was running resumes from its checkpoint."""
    proc = cli.popen("run", str(FLIGHTS_SQL), MAX_RECORDS_PER_BATCH=30000, CHECKPOINT_INTERVAL=0)
    try:
        # SIGKILL once both jobs have committed at least 3 checkpoints but are far from done
        def progressed():
            ids = cli.last_checkpoints()
            return len(ids) == 2 and all((i or -1) >= 2 for i in ids.values())

        wait_for(progressed, 300, "3 checkpoints of both jobs")
    finally:
        kill_group(proc, signal.SIGKILL)
    jobs = cli.json("list")
    assert min(j["last_checkpoint"] for j in jobs) < 11, "the crash should come before the end"
    partial = carrier_delays(cli.home)["flights"].sum()
    assert 0 < partial < len(expected["late_flights"]) * 100

    if resume == "file":
        res = cli.run("run", str(FLIGHTS_SQL), "--until-idle", MAX_RECORDS_PER_BATCH=30000,
                      CHECKPOINT_INTERVAL=0)
    else:
        res = cli.run("server", "--until-idle")
        for name in JOBS:
            assert f"streamjob {name} started" in res.stdout
    assert res.returncode == 0, res.stdout + res.stderr
    assert_matches_batch(cli.home, expected)
    # resumed from the checkpoints: the retained ones continue the killed run's ids
    for name in JOBS:
        ids = [c["checkpoint_id"] for c in cli.json("checkpoints", name)]
        assert ids[0] > 0
