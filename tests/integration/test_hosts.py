"""A job run by ``streamjob run`` (or the shell) while a server holds the lease: the
server leaves it to its live owner, and takes it over from its checkpoints once that
process is killed (manager/liveness.py): two processes never run one job."""

from __future__ import annotations

import os
import signal
import subprocess
import uuid

import pytest

from streamjob_tools.dev.broker import create_topic

from .conftest import STREAMJOB
from .test_server import JOB_SQL, Env

# slow (make test-slow, CI): a `streamjob run` process killed and taken over by a server: two processes, two JVMs
pytestmark = [pytest.mark.system, pytest.mark.slow]


@pytest.fixture
def env(tmp_path, broker):
    topic = f"events_{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, 2)
    e = Env(tmp_path, f"sqlite:///{tmp_path}/home/catalog.db", broker.bootstrap, topic)
    try:
        yield e
    finally:
        e.close()


def test_server_leaves_a_job_to_its_live_host_and_takes_it_over_when_it_dies(env):
    env.feed()
    server = env.server()
    script = env.root / "hosted.sql"
    script.write_text(JOB_SQL.format(topic=env.topic, bootstrap=env.bootstrap, job="hosted"))
    run = subprocess.Popen([STREAMJOB, "--catalog", env.url, "run", str(script)],
                           env=env.environ(), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        job = env.wait_job("hosted", 180, "running in streamjob run", status="RUNNING")
        host = job.owner
        assert host and host != server.id
        server.wait_line(r"streamjob default\.hosted runs in \S+ .*left to it", 60)
        first = max(env.checkpoint_ids("hosted"), default=-1)
        env.wait_checkpoint_beyond("hosted", first, 60)
        assert env.job("hosted").owner == host  # the server did not start it as well
        os.killpg(run.pid, signal.SIGKILL)
        run.wait(30)
        env.wait_job("hosted", 120, "taken over by the server", status="RUNNING",
                     owner=server.id)
        last = max(env.checkpoint_ids("hosted"))
        assert env.wait_checkpoint_beyond("hosted", last, 60)  # resumed, ids continue
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait(30)


def test_stop_and_drop_from_another_client_reach_the_job_streamjob_run_hosts(env):
    """No server: ``streamjob run`` hosts the job. ``streamjob stop`` from another client
    reaches it (the run process follows desired states with its heartbeat), returns once
    it stopped after its batch, and the run process, with no job left, exits 0."""
    env.feed()
    script = env.root / "hosted.sql"
    script.write_text(JOB_SQL.format(topic=env.topic, bootstrap=env.bootstrap, job="hosted"))
    run = subprocess.Popen([STREAMJOB, "--catalog", env.url, "run", str(script)],
                           env=env.environ(), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        job = env.wait_job("hosted", 180, "running in streamjob run", status="RUNNING")
        env.wait_checkpoint_beyond("hosted", -1, 60)
        stop = subprocess.run([STREAMJOB, "stop", "hosted", "--catalog", env.url],
                              env=env.environ(), capture_output=True, text=True, timeout=120)
        assert stop.returncode == 0 and stop.stdout == "streamjob default.hosted stopped\n", (
            stop.stdout + stop.stderr)
        now = env.job("hosted")
        assert (now.status, now.owner, now.desired_state) == ("STOPPED", None, "STOPPED")
        out, _ = run.communicate(timeout=60)
        assert run.returncode == 0, out
        last = env.catalog.list_runs(job.uid)[-1]
        # stopped by its own runner after the batch (not closed by the client because the
        # run process had gone: "stopped while its job manager ... was gone")
        assert (last.status, last.cause) == ("STOPPED", "stopped"), last
        drop = subprocess.run([STREAMJOB, "drop", "hosted", "--catalog", env.url],
                              env=env.environ(), capture_output=True, text=True, timeout=60)
        assert drop.returncode == 0, drop.stdout + drop.stderr
        assert env.job("hosted") is None
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait(30)
