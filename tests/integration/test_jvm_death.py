"""Issue 13, point 11: a dead Spark JVM (OOM kill, System.exit, kill -9) is detected.
A server starts a new Spark session and fails its jobs over from their checkpoints,
nothing lost or doubled; ``streamjob run`` exits 1 with one sentence, and the next run
resumes. On the main of 2026-11-23 the server's jobs failed over into the dead session
until FAILED, and ``run`` printed Py4J errors. Only a process can show this: the JVM is
killed by its pid (the ``java`` child of the streamjob process)."""

from __future__ import annotations

import os
import signal
import subprocess
import uuid
from pathlib import Path

import pytest

from streamjob.phases import read as read_phases

from streamjob.connectors.files.table import committed_files
from streamjob_tools.dev.broker import create_topic

from .conftest import STREAMJOB, children
from .test_server import JOB_SQL, Env, wait_for

# slow (make test-slow, CI): each test kills a Spark JVM and starts two or three more (about 30 s each on a fast host)
pytestmark = [pytest.mark.system, pytest.mark.slow]


def jvm_of(pid: int) -> int:
    """The pid of the Spark driver JVM started by process ``pid`` (its ``java`` child)."""
    return wait_for(lambda: next((c for c, name in children(pid).items()
                                  if name == "java" and not exited(c)), None),
                    120, f"the JVM of process {pid}")


def exited(pid: int) -> bool:
    """True once process ``pid`` has ended: gone, or a zombie (ended, not yet reaped by
    its new parent, PID 1 or a subreaper, which is no business of streamjob's)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2:].split()[0] in ("Z", "X")


def output_ids(location: Path) -> list[int]:
    import json

    ids = []
    for f in committed_files(str(location)):
        ids += [json.loads(line)["id"] for line in Path(f).read_text().splitlines() if line]
    return sorted(ids)


@pytest.fixture
def env(tmp_path, broker):
    topic = f"events_{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, 2)
    e = Env(tmp_path, f"sqlite:///{tmp_path}/home/catalog.db", broker.bootstrap, topic)
    yield e
    e.close()


def test_a_server_restarts_spark_when_its_jvm_dies_and_the_job_resumes_exactly(env):
    server = env.server()
    env.create_job("j")
    feeder = env.feed()
    env.wait_job("j", 180, "running", status="RUNNING")
    first = env.wait_checkpoint_beyond("j", -1, 180)
    os.kill(jvm_of(server.proc.pid), signal.SIGKILL)
    server.wait_line(r"the Spark JVM of this process died", 60)
    env.wait_checkpoint_beyond("j", max(first), 240)  # a new JVM, the job running again
    assert server.proc.poll() is None
    feeder.stop()
    sent = feeder.sent
    location = env.home / "warehouse" / "default" / "j_out"
    wait_for(lambda: len(output_ids(location)) >= sent, 240, f"{sent} rows in j_out")
    assert output_ids(location) == list(range(sent))  # nothing lost, nothing doubled
    assert env.job("j").status == "RUNNING"

    # issue 16: `kill -9` of the server process alone, not its group (the JVM gets no
    # signal): the JVM sees end of file on its stdin, a pipe from the server, and exits at
    # once, not left behind running the job
    jvm = jvm_of(server.proc.pid)
    os.kill(server.proc.pid, signal.SIGKILL)
    server.proc.wait(30)
    wait_for(lambda: exited(jvm), 60, f"the JVM {jvm} of the killed server to exit",
             interval=0.1)


def test_run_exits_with_one_sentence_when_its_jvm_dies_and_the_next_run_resumes(env):
    script = env.root / "job.sql"
    script.write_text(JOB_SQL.format(topic=env.topic, bootstrap=env.bootstrap, job="r"))
    feeder = env.feed()
    proc = subprocess.Popen([STREAMJOB, "--catalog", env.url, "run", str(script)],
                            env=env.environ(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    try:
        env.wait_job("r", 180, "running", status="RUNNING")
        env.wait_checkpoint_beyond("r", -1, 180)
        os.kill(jvm_of(proc.pid), signal.SIGKILL)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 1, out
    errors = [line for line in out.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "the Spark JVM of this process died" in errors[0], out
    assert "Traceback" not in out and "Py4J" not in out
    feeder.stop()
    sent = feeder.sent
    resume = env.root / "resume.sql"
    resume.write_text("START STREAMJOB r;\n")
    marks = env.root / "phases.jsonl"  # the cold start's phases (issue 19)
    again = subprocess.run([STREAMJOB, "--catalog", env.url, "run", str(resume), "--until-idle"],
                           env={**env.environ(), "STREAMJOB_PHASES": str(marks)},
                           capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    assert output_ids(env.home / "warehouse" / "default" / "r_out") == list(range(sent))
    at = {m["phase"]: m["at"] for m in read_phases(str(marks))
          if m["job"] in (None, "default.r")}
    assert set(at) >= {"process start", "imports done", "JVM up", "session ready",
                       "plan done", "query started", "first batch started", "first commit"}, at
    for before, after in (("process start", "imports done"), ("imports done", "JVM up"),
                          ("JVM up", "session ready"), ("session ready", "query started"),
                          ("plan done", "query started"), ("first batch started", "first commit"),
                          ("query started", "first commit")):
        assert at[before] <= at[after], (before, after, at)
