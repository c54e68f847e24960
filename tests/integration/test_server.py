"""The job manager service with real processes: ``streamjob server`` and client commands
as separate processes on one catalog, SQLite and PostgreSQL (DESIGN §5, §8).

Each test has its own home, catalog (a SQLite file, or a fresh PostgreSQL schema) and
Kafka topic on the session's broker; a feeder thread produces a small JSON record every
50 ms so the jobs keep making checkpoints (interval 1 s, longer than a batch takes
here, so a graceful stop finds the gap between two batches). The test process reads the
catalog directly (no Spark here) and waits on conditions with deadlines; the servers'
stdout lines are collected by a reader thread and waited on the same way. Signals go
to the server process alone (``kill PID``), except SIGKILL, SIGSTOP and SIGCONT, which
go to its process group (the Python process and its Spark JVM).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
import uuid
from datetime import timezone
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from streamjob.catalog import Catalog
from streamjob.catalog.models import MANAGER_LEASE, Lease
from streamjob.checkpoint.store import log_ids
from streamjob_tools.dev.broker import create_topic

from .conftest import STREAMJOB
from .conftest import wait_for as _wait_for

pytestmark = pytest.mark.system
#: Seconds this module takes on a fast host: make test hands the longest modules out first
#: (tests/conftest.py), so the run does not end on one of them while the other worker idles.
EXPECTED_S = 40

TRACE = bool(os.environ.get("SJ_TRACE"))
"""``SJ_TRACE=1``: print the servers' lines and each wait's duration, with times (-s)."""
T0 = time.monotonic()


def wait_for(predicate, timeout: float, what: str, interval: float = 0.2):
    """conftest's ``wait_for`` (poll a catalog read until true; fail naming ``what``),
    timed under ``SJ_TRACE``."""
    t = time.monotonic()
    try:
        return _wait_for(predicate, timeout, what, interval)
    finally:
        if TRACE:
            print(f"{time.monotonic() - T0:7.2f} waited {time.monotonic() - t:5.2f} s for {what}")


#: The local time at the start of each line the server prints about itself and its jobs
#: (streamjob/manager/serverlog.py): ``2026-11-25 14:30:01,123 ``.
STAMP = r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} "

PG_URL = os.environ.get("STREAMJOB_TEST_PG_URL",
                        "postgresql+psycopg://postgres@127.0.0.1:5432/test")

JOB_SQL = """
CREATE STREAM IF NOT EXISTS events (id INT, v STRING)
TBLPROPERTIES ("topic"="{topic}", "kafka.broker.list"="{bootstrap}", "format"="json");
CREATE TABLE IF NOT EXISTS {job}_out (id INT, v STRING) STORED AS JSON;
CREATE STREAMJOB {job} AS ("insert into {job}_out select id, v from events")
JOBPROPERTIES ("morphling.job.checkpoint.interval"="1000");
START STREAMJOB {job};
"""


class Server:
    """A ``streamjob server`` process in its own process group; its output lines are
    collected by a thread and can be waited for."""

    def __init__(self, env: "Env", *args: str) -> None:
        self.proc = subprocess.Popen(
            [STREAMJOB, "--catalog", env.url, "server", *args], env=env.environ(),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True)
        self.lines: list[str] = []
        self._eof = False
        self._cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        self.id = self.wait_line(rf"{STAMP}server (\S+): job manager on", 60).group(1)

    def _read(self) -> None:
        for line in self.proc.stdout:
            with self._cond:
                if TRACE:
                    print(f"{time.monotonic() - T0:7.2f} {self.proc.pid}: {line.rstrip()}")
                self.lines.append(line.rstrip("\n"))
                self._cond.notify_all()
        with self._cond:
            self._eof = True
            self._cond.notify_all()

    @property
    def output(self) -> str:
        with self._cond:
            return "\n".join(self.lines)

    def wait_line(self, pattern: str, timeout: float) -> re.Match:
        """The first output line matching ``pattern``; fails after ``timeout`` s or if
        the process ended without printing one."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for line in self.lines:
                    m = rx.search(line)
                    if m:
                        return m
                left = deadline - time.monotonic()
                if left <= 0 or self._eof:
                    pytest.fail(f"no line matching {pattern!r} within {timeout} s "
                                f"(exit {self.proc.poll()}); output:\n" + "\n".join(self.lines))
                self._cond.wait(min(left, 0.5))

    def signal(self, sig: int) -> None:
        """Send ``sig`` to the whole group (the Python process and its Spark JVM)."""
        os.killpg(self.proc.pid, sig)

    def terminate(self) -> None:
        """SIGTERM to the server process alone, as ``kill PID`` or systemd with
        KillMode=mixed do (a signal to the group would kill Spark's JVM and Python
        workers under the server's feet)."""
        self.proc.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL the whole group (the Python process and its Spark JVM)."""
        if self.proc.poll() is None:
            self.signal(signal.SIGKILL)
        self.proc.wait(60)

    def wait_exit(self, timeout: float) -> int:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"server {self.id} did not exit within {timeout} s; output:\n"
                        + self.output)


class Feeder:
    """Produces ``{"id": n, "v": "r<n>"}`` to the topic every ``every_s`` seconds, each
    record flushed alone (visible at once to offset readers on this broker)."""

    def __init__(self, bootstrap: str, topic: str, every_s: float = 0.05) -> None:
        from kafka import KafkaProducer

        self.producer = KafkaProducer(bootstrap_servers=bootstrap, acks=1, linger_ms=0)
        self.topic, self.every_s, self.sent = topic, every_s, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.producer.send(self.topic, json.dumps({"id": self.sent, "v": f"r{self.sent}"})
                               .encode(), partition=self.sent % 2)
            self.producer.flush()
            self.sent += 1
            self._stop.wait(self.every_s)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self.producer.close()


class Env:
    """One test's home, catalog URL, topic and client commands."""

    def __init__(self, root: Path, url: str, bootstrap: str, topic: str) -> None:
        self.root, self.url, self.bootstrap, self.topic = root, url, bootstrap, topic
        self.home = root / "home"
        self.home.mkdir(parents=True)
        (self.home / "streamjob.conf").write_text(
            "spark.master=local[2]\nspark.sql.shuffle.partitions=2\n")
        self.catalog = Catalog(url)
        self.servers: list[Server] = []
        self.feeder: Feeder | None = None

    def environ(self) -> dict:
        return {**os.environ, "STREAMJOB_HOME": str(self.home)}

    def server(self, *args: str) -> Server:
        s = Server(self, *args)
        self.servers.append(s)
        return s

    def submit(self, sql: str) -> str:
        path = self.root / f"submit-{uuid.uuid4().hex[:6]}.sql"
        path.write_text(sql)
        res = subprocess.run([STREAMJOB, "--catalog", self.url, "submit", str(path)],
                             env=self.environ(), capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stdout + res.stderr
        return res.stdout

    def client(self, sql: str) -> str:
        """Apply ``sql`` as ``streamjob submit`` does (a catalog-only
        :class:`~streamjob.client.session.ClientSession`: it hosts no job and starts no
        Spark), in this process: a client beside the server without a Python start
        (about 1.5-2.5 s of CPU each). The results' messages, one a line, as ``submit``
        prints them."""
        from streamjob.client.session import ClientSession
        from streamjob.home import Home

        session = ClientSession(self.catalog, Home.open(self.home))
        try:
            return "\n".join(result.message or "" for _, result in session.execute_script(sql))
        finally:
            session.close()

    def create_job(self, job: str, in_process: bool = False) -> str:
        """Submit :data:`JOB_SQL` for ``job``: by ``streamjob submit``, or ``in_process``
        by :meth:`client`."""
        sql = JOB_SQL.format(topic=self.topic, bootstrap=self.bootstrap, job=job)
        return self.client(sql) if in_process else self.submit(sql)

    def feed(self) -> Feeder:
        self.feeder = Feeder(self.bootstrap, self.topic)
        return self.feeder

    def job(self, name: str):
        return self.catalog.get_job("default", name)

    def checkpoint_ids(self, name: str) -> list[int]:
        job = self.job(name)
        return [c.checkpoint_id for c in self.catalog.list_checkpoints(job.uid)] if job else []

    def checkpoint_dir(self, name: str) -> str:
        return str(self.home / "checkpoints" / "default" / name)

    def wait_job(self, name: str, timeout: float, what: str, interval: float = 0.2, **fields):
        """Wait until job ``name`` has every given field value (``owner=...``,
        ``status=...``); returns the job."""
        def ok():
            job = self.job(name)
            return job if job and all(getattr(job, k) == v for k, v in fields.items()) else None

        return wait_for(ok, timeout, f"{name}: {what} ({fields})", interval)

    def wait_checkpoint_beyond(self, name: str, after: int, timeout: float) -> list[int]:
        return wait_for(lambda: [i for i in self.checkpoint_ids(name) if i > after] or None,
                        timeout, f"a checkpoint of {name} after {after}")

    def wait_batches_beyond(self, after: dict[str, int], timeout: float) -> dict[str, set[int]]:
        """Every checkpoint id seen beyond ``after[name]`` for each job, all jobs watched
        together until each has one: at 1 s a checkpoint, a job watched only after another
        could roll its first new batch off the five retained ones."""
        seen: dict[str, set[int]] = {name: set() for name in after}

        def each_has_one():
            for name, ids in seen.items():
                ids.update(i for i in self.checkpoint_ids(name) if i > after[name])
            return all(seen.values()) or None
        wait_for(each_has_one, timeout, f"a checkpoint of {', '.join(after)} beyond {after}",
                 interval=0.1)
        return seen

    def close(self) -> None:
        if self.feeder is not None:
            self.feeder.stop()
        for s in self.servers:
            s.kill()
        self.catalog.close()


# the PostgreSQL variants are `slow` (make test-slow, CI): `make test` runs each scenario
# once, on SQLite
@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])
def env(request, tmp_path, broker):
    topic = f"events_{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, 2)
    admin = schema = None
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path}/home/catalog.db"
    else:
        admin = create_engine(PG_URL)
        schema = f"sj_server_{uuid.uuid4().hex[:10]}"
        with admin.begin() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        url = make_url(PG_URL).update_query_dict({"options": f"-csearch_path={schema}"}) \
            .render_as_string(hide_password=False)
    e = Env(tmp_path, url, broker.bootstrap, topic)
    try:
        yield e
    finally:
        e.close()
        if admin is not None:
            with admin.begin() as conn:
                conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
            admin.dispose()


# ---------------------------------------------------------------------- tests


def test_server_follows_submit_stop_and_drop(env):
    """(a) Jobs submitted by another process start within a few seconds; STOP STREAMJOB
    stops one after its batch and returns once it is STOPPED (no owner); DROP STREAMJOB
    of a running job lets the server stop it before purging; a job whose row is deleted
    while it runs is stopped at once and its checkpoints purged; DROP of a stopped job
    makes it go for good; progress is written about once a second. The first job comes
    from ``streamjob submit``; the later statements from a client session in this
    process (what ``submit`` runs, without a Python start each)."""
    server = env.server()
    server.wait_line(r": active \(holds the job manager lease\)", 60)
    holder = env.catalog.lease_holder()
    assert holder is not None and holder.server_id == server.id
    env.feed()
    env.create_job("first")
    env.wait_job("first", 120, "started by the server", status="RUNNING", owner=server.id)
    env.wait_checkpoint_beyond("first", -1, 60)

    # Spark is up now: a second job must start within the poll interval plus a little
    env.create_job("second", in_process=True)
    submitted = time.monotonic()
    # (15 s: "within a second" on a calm machine, with room for a loaded CI host)
    env.wait_job("second", 15, "picked up within a few seconds", owner=server.id, interval=0.05)
    picked_up = time.monotonic() - submitted
    env.wait_job("second", 60, "running", status="RUNNING")
    first_ck = env.checkpoint_ids("first")[-1]

    # progress: batch, rates, lag and last checkpoint time, about once a second
    def progressed():
        p = env.job("first").progress
        return p if p.get("batch_id", -1) > first_ck and p.get("last_checkpoint_at") \
            and p.get("lag_records") is not None else None

    progress = wait_for(progressed, 30, "progress of job first")
    assert set(progress) == {"batch_id", "input_rows_per_s", "processed_rows_per_s",
                             "lag_records", "lag_by_partition", "last_checkpoint_at", "updated_at"}
    assert 0 <= progress["lag_records"] < 1000 and progress["input_rows_per_s"] >= 0

    # STOP from a client returns once the server has stopped the job after its batch
    out = env.client("STOP STREAMJOB first;")
    assert "streamjob default.first stopped" in out, out
    job = env.job("first")
    assert (job.status, job.owner, job.desired_state) == ("STOPPED", None, "STOPPED")
    server.wait_line(r"streamjob default\.first stopped \(stopped\)", 60)
    runs = env.catalog.list_runs(job.uid)
    assert runs[-1].status == "STOPPED" and runs[-1].ended_at is not None
    ck = env.checkpoint_dir("first")
    # after its batch: the checkpoint ends on a commit, or on the one batch Spark had
    # already planned (offsets written ahead), which the next start replays (docs/design.md,
    # "Decisions": a graceful stop)
    assert log_ids(ck, "offsets")[-1] - log_ids(ck, "commits")[-1] in (0, 1)

    # DROP of a running job from a client: the server stops it first (after its batch),
    # then the client purges; nothing writes to the directory after the purge.
    second = env.job("second")
    out = env.client("DROP STREAMJOB second;")
    assert "dropped; its checkpoints were purged" in out, out
    server.wait_line(r"streamjob default\.second stopped", 30)  # printed by the server
    assert not Path(env.checkpoint_dir("second")).exists()
    assert env.catalog.list_runs(second.uid) == []

    # a job row that disappears while the job runs (deleted through the catalog API):
    # the server stops it at once and purges its checkpoints itself
    env.create_job("fourth", in_process=True)
    fourth = env.wait_job("fourth", 60, "running", status="RUNNING", owner=server.id)
    env.wait_checkpoint_beyond("fourth", -1, 60)
    env.catalog.drop_job("default", "fourth")
    server.wait_line(r"streamjob default\.fourth stopped \(dropped\)", 60)
    assert not Path(env.checkpoint_dir("fourth")).exists()
    assert env.catalog.list_runs(fourth.uid) == []

    env.client("DROP STREAMJOB first;")  # a stopped job: gone, and nothing restarts it
    assert env.job("first") is None and not Path(env.checkpoint_dir("first")).exists()
    after_stop = server.output.split("default.first stopped (stopped)")[-1]
    assert "default.first started" not in after_stop  # never restarted
    server.terminate()
    assert server.wait_exit(60) == 0, server.output
    # issue 16: each line about the server and its jobs starts with the local time and is
    # in <home>/logs/server.log too; none without its time
    own = re.compile(r"(server \S+|standby|streamjob \S+) ")
    stamped = [line for line in server.lines if re.match(STAMP + own.pattern, line)]
    assert not [line for line in server.lines if own.match(line)], server.output
    assert any(": SIGTERM: stopping" in line for line in stamped), server.output
    logged = (env.home / "logs" / "server.log").read_text().splitlines()
    assert stamped and all(line in logged for line in stamped), (stamped, logged)
    print(f"\nsecond job picked up {picked_up:.2f} s after `submit` returned "
          f"({env.catalog.dialect})")


def assert_each_record_once(env: "Env", name: str) -> None:
    """Job ``name``'s output table (its committed batches, read through the file sink's
    manifest) holds each fed record at most once, and in each topic partition (the
    feeder sends id n to partition n % 2) a gapless run of ids: nothing lost, nothing
    written twice by two runners."""
    from streamjob.connectors.files.table import committed_files

    ids = [json.loads(line)["id"]
           for f in committed_files(str(env.home / "warehouse" / "default" / f"{name}_out"))
           for line in Path(f).read_text().splitlines() if line.strip()]
    assert ids and len(ids) == len(set(ids)), f"{name}: duplicates in {sorted(ids)}"
    for p in (0, 1):
        part = sorted(i for i in ids if i % 2 == p)
        assert part == list(range(part[0], part[-1] + 1, 2)), f"{name}: gaps in {part}"


@pytest.mark.slow  # the lease scenarios are all slow; `make test` keeps submit/stop/drop
def test_standby_takeover_after_sigkill_and_handover_at_sigterm(env):
    """(b)-(d) in one life of a catalog, three servers:

    * two servers, one lease: only its holder runs the jobs, the standby runs none but
      its throwaway warm-up batch (issue 19: 64 rows read by Spark's Python workers,
      not by the server process), which the holder, active before its Spark started,
      does not run;
    * SIGKILL of the holder: the standby takes over once the lease expired (TTL 3 s)
      and the jobs resume from their checkpoints (ids continue);
    * a server started after the kill waits as the new standby (then frozen with
      SIGSTOP, so that what the next step leaves stays visible);
    * SIGTERM of the holder: every job stops after its current batch (STOPPED, desired
      state still RUNNING, the checkpoint logs end on a commit or one planned batch
      after it), the lease is released
      and the server unregistered, so the standby, thawed, takes over at once, long
      before the holder's 30 s TTL, resuming with the next batch;
    * never two runners (issue 19): each job's runs, over the three servers, follow one
      another without overlapping, and its output table holds every record of its
      committed range exactly once.
    """
    first = env.server("--lease-ttl", "3000")
    first.wait_line(r": active \(holds the job manager lease\)", 60)
    second = env.server("--lease-ttl", "30000")
    second.wait_line(rf"{STAMP}standby: server {re.escape(first.id)} holds the lease", 60)
    warm = second.wait_line(r"standby warm: Spark up, a throwaway batch read (\d+) rows "
                            r"in (\d+) Python worker", 180)
    assert (int(warm.group(1)), int(warm.group(2))) in ((64, 1), (64, 2)), warm.group(0)
    assert {s.server_id for s in env.catalog.list_servers()} == {first.id, second.id}
    env.feed()
    env.create_job("k1")
    env.create_job("k2")
    for name in ("k1", "k2"):
        env.wait_job(name, 120, "run by the lease holder", status="RUNNING", owner=first.id)
        env.wait_checkpoint_beyond(name, 0, 60)
    assert env.catalog.lease_holder().server_id == first.id
    assert " started" not in second.output  # the standby runs nothing

    # (b), (c): SIGKILL of the holder; the standby takes over after the lease expired
    first.kill()
    killed_at = time.monotonic()
    # the dead holder renews nothing more: its lease expires this many seconds from now
    with env.catalog._tx() as session:  # noqa: SLF001 - the lease row, the db's clock
        expires_at = session.get(Lease, MANAGER_LEASE).expires_at
        now = env.catalog._db_now(session)  # noqa: SLF001
    expires_at = expires_at if expires_at.tzinfo else expires_at.replace(tzinfo=timezone.utc)
    remaining = (expires_at - now).total_seconds()
    killed = {n: max(env.checkpoint_ids(n)) for n in ("k1", "k2")}  # recorded
    committed = {n: log_ids(env.checkpoint_dir(n), "commits")[-1] for n in ("k1", "k2")}
    second.wait_line(r": active \(", 60)
    took_over = time.monotonic() - killed_at
    assert took_over >= remaining - 0.05, \
        f"took the lease {took_over:.2f} s after the kill, before it expired ({remaining:.2f} s)"
    # a new server, started now, waits as standby (its Spark starts meanwhile)
    third = env.server("--lease-ttl", "30000")
    # a batch committed by the new holder (a batch the kill interrupted runs again)
    resumed = env.wait_batches_beyond(killed, 90)
    for name in ("k1", "k2"):
        job = env.wait_job(name, 90, "taken over", status="RUNNING", owner=second.id)
        env.wait_checkpoint_beyond(name, committed[name], 60)  # committed by the new holder
        assert min(resumed[name]) <= killed[name] + 2, \
            f"{name} did not resume from its checkpoint ({sorted(resumed[name])})"
        runs = env.catalog.list_runs(job.uid)
        assert any(r.status == "FAILED" and first.id in (r.cause or "") for r in runs), runs
        assert runs[-1].ended_at is None and len([r for r in runs if r.ended_at is None]) == 1

    third.wait_line(rf"{STAMP}standby: server {re.escape(second.id)} holds the lease", 60)
    assert " started" not in third.output

    # (d): SIGTERM of the holder, with the standby frozen
    third.signal(signal.SIGSTOP)
    try:
        second.terminate()
        assert second.wait_exit(90) == 0, second.output
        assert "Traceback" not in second.output, second.output
        stopped = {}
        for name in ("k1", "k2"):
            job = env.job(name)
            assert (job.status, job.desired_state, job.owner) == ("STOPPED", "RUNNING", None)
            runs = env.catalog.list_runs(job.uid)
            assert (runs[-1].status, runs[-1].cause) == ("STOPPED", "stopped"), runs
            ck = env.checkpoint_dir(name)
            offsets, commits = log_ids(ck, "offsets"), log_ids(ck, "commits")
            # after its batch: on a commit, or one planned batch ahead, replayed at the next
            # start (docs/design.md "Decisions": a graceful stop)
            assert offsets[-1] - commits[-1] in (0, 1), f"{name}: {offsets} / {commits}"
            stopped[name] = max(env.checkpoint_ids(name))
            assert stopped[name] == commits[-1]
        with env.catalog._engine.connect() as conn:  # noqa: SLF001 - the raw lease row
            assert conn.execute(text("SELECT holder, expires_at FROM leases")).all() == [
                (None, None)]
        servers = {s.server_id for s in env.catalog.list_servers()}
        assert second.id not in servers and third.id in servers  # (first: dead, not pruned yet)
        assert env.catalog.lease_holder() is None
    finally:
        third.signal(signal.SIGCONT)
    thawed = time.monotonic()
    third.wait_line(r": active \(", 15)
    handed_over = time.monotonic() - thawed
    assert handed_over < 5, f"took {handed_over:.1f} s: the lease was not released"
    seen = env.wait_batches_beyond(stopped, 90)
    for name in ("k1", "k2"):
        env.wait_job(name, 90, "taken over", status="RUNNING", owner=third.id)
        assert min(seen[name]) == stopped[name] + 1, \
            f"{name}: the next batch follows the last commit ({sorted(seen[name])})"
    third.terminate()
    assert third.wait_exit(90) == 0, third.output
    assert "standby warm" not in first.output  # it held the lease before Spark was up
    for name in ("k1", "k2"):
        runs = sorted(env.catalog.list_runs(env.job(name).uid), key=lambda r: r.started_at)
        assert len(runs) >= 3 and all(r.ended_at is not None for r in runs), runs
        for before, after in zip(runs, runs[1:]):
            assert before.ended_at <= after.started_at, f"{name}: runs overlap: {runs}"
        assert_each_record_once(env, name)
    print(f"\nstandby took over {took_over:.1f} s after SIGKILL (lease TTL 3 s); "
          f"{handed_over:.2f} s after a SIGTERM released it ({env.catalog.dialect})")


@pytest.mark.slow  # a failure mode: the lease is held past its TTL (20-30 s)
def test_holder_that_cannot_renew_its_lease_fences_its_jobs(env):
    """A holder whose lease renewals stall (here: the test locks the lease for longer
    than the TTL — SQLite: an exclusive write lock on the catalog; PostgreSQL: ACCESS
    EXCLUSIVE on ``leases``) stops every job at once before the lease expires, writing
    nothing; once the catalog answers again it takes the lease back and runs them."""
    ttl = 3000
    server = env.server("--lease-ttl", str(ttl))
    server.wait_line(r": active \(", 60)
    env.feed()
    env.create_job("f")
    job = env.wait_job("f", 120, "running", status="RUNNING", owner=server.id)
    env.wait_checkpoint_beyond("f", 0, 60)

    if env.catalog.dialect == "sqlite":
        import sqlite3

        lock = sqlite3.connect(make_url(env.url).database, timeout=30, isolation_level=None)
        lock.execute("BEGIN EXCLUSIVE")
    else:
        lock = env.catalog._engine.connect()  # noqa: SLF001 - a raw transaction
        lock.begin()
        lock.execute(text("LOCK TABLE leases IN ACCESS EXCLUSIVE MODE"))
    locked_at, locked_wall = time.monotonic(), time.time()
    try:
        server.wait_line(r"could not be renewed in time: stopped 1 job\(s\) at once \(fenced\)",
                         ttl / 1000 + 10)
        fenced_after = time.monotonic() - locked_at
        ck = env.checkpoint_dir("f")
        commits = log_ids(ck, "commits")
        # the safety property: no batch committed once the lease could have expired (its
        # last renewal came before the lock, so it expires before locked + TTL)
        last_commit = max((Path(ck) / "commits" / str(i)).stat().st_mtime for i in commits)
        assert last_commit < locked_wall + ttl / 1000, \
            f"batch {max(commits)} committed {last_commit - locked_wall:.2f} s after the lock"
        # the outage lasts past the lease's expiry; meanwhile the queries stay stopped
        # (the recorder may still trim the oldest entry of a batch committed before)
        while time.monotonic() - locked_at < ttl / 1000 + 1:
            assert max(log_ids(ck, "commits")) == max(commits)
            time.sleep(0.1)
        assert env.job("f").status == "RUNNING"  # a fenced server writes nothing
    finally:
        lock.rollback() if env.catalog.dialect != "sqlite" else lock.execute("ROLLBACK")
        lock.close()
    server.wait_line(r"streamjob default\.f stopped \(fenced\)", 60)
    # the catalog answers again: the lease is taken back and the job runs again
    wait_for(lambda: server.output.count(": active (") >= 2, 30, "the lease taken back")
    new = env.wait_checkpoint_beyond("f", max(commits), 90)
    assert min(new) <= max(commits) + 2
    job = env.wait_job("f", 30, "running again", status="RUNNING", owner=server.id)
    runs = env.catalog.list_runs(job.uid)
    assert len(runs) >= 2 and "lost its lease" in (runs[-2].cause or ""), runs
    server.terminate()
    assert server.wait_exit(90) == 0, server.output
    print(f"\nfenced {fenced_after:.2f} s after the lease was locked (TTL {ttl} ms, "
          f"{env.catalog.dialect})")


@pytest.mark.parametrize("env", [pytest.param("postgresql", marks=pytest.mark.slow)],
                         indirect=True)
def test_a_stalled_holder_fences_itself_and_gives_its_jobs_up(env):
    """A holder frozen (SIGSTOP) past its lease: the standby takes the lease but leaves
    the job to its still registered owner (never two runners); thawed, the old holder
    fences itself, stops the job and releases it, and the new holder runs it while the
    old process lives on as a standby. PostgreSQL only (the catalog that spans hosts,
    and the module's time budget); the catalog calls are the same on SQLite."""
    ttl = 3000
    old = env.server("--lease-ttl", str(ttl))
    old.wait_line(r": active \(", 60)
    new = env.server("--lease-ttl", str(ttl))
    new.wait_line(rf"{STAMP}standby: server {re.escape(old.id)} holds the lease", 60)
    env.feed()
    env.create_job("s")
    env.wait_job("s", 120, "run by the holder", status="RUNNING", owner=old.id)
    env.wait_checkpoint_beyond("s", 0, 60)

    old.signal(signal.SIGSTOP)
    try:
        new.wait_line(r": active \(", 30)
        new.wait_line(rf"streamjob default\.s runs in {re.escape(old.id)}", 30)
        assert env.job("s").owner == old.id  # left to its live owner: never two runners
    finally:
        old.signal(signal.SIGCONT)
    old.wait_line(r"\(fenced\)", 30)
    job = env.wait_job("s", 90, "run by the new holder", status="RUNNING", owner=new.id)
    committed = log_ids(env.checkpoint_dir("s"), "commits")[-1]
    env.wait_checkpoint_beyond("s", committed, 60)
    old.wait_line(rf"{STAMP}standby: server {re.escape(new.id)} holds the lease", 30)
    assert old.proc.poll() is None  # the fenced server lives on, as a standby
    runs = env.catalog.list_runs(job.uid)
    assert len([r for r in runs if r.ended_at is None]) == 1, runs
    for s in (new, old):
        s.terminate()
        assert s.wait_exit(90) == 0, s.output


@pytest.mark.slow
def test_ten_jobs_at_once_all_keep_making_checkpoints(env):
    """Ten jobs on one server (this two-core machine, Spark local[2]): all run, each
    keeps committing checkpoints (and the recorder keeps up with them) while the feeder
    writes, and a SIGTERM stops all ten after their current batch. Marked slow (about a
    minute per catalog); ``make test`` runs it."""
    names = [f"j{i:02d}" for i in range(10)]
    server = env.server()
    server.wait_line(r": active \(", 60)
    env.feed()
    script = "".join(JOB_SQL.format(topic=env.topic, bootstrap=env.bootstrap, job=n)
                     for n in names)
    env.submit(script.replace('"morphling.job.checkpoint.interval"="1000"',
                              '"morphling.job.checkpoint.interval"="2000"'))
    for name in names:
        env.wait_job(name, 180, "running", status="RUNNING", owner=server.id)
    first = {n: max(env.wait_checkpoint_beyond(n, -1, 180)) for n in names}
    for name in names:  # each one goes on: two more checkpoints
        env.wait_checkpoint_beyond(name, first[name] + 1, 120)
    lags = {n: env.job(n).progress.get("lag_records") for n in names}
    assert all(lag is not None and lag < 500 for lag in lags.values()), lags
    server.terminate()
    assert server.wait_exit(120) == 0, server.output
    for name in names:
        job = env.job(name)
        assert (job.status, job.desired_state, job.owner) == ("STOPPED", "RUNNING", None)
        ck = env.checkpoint_dir(name)
        # stopped between batches, or (a trigger that fired between the check and the
        # stop) with the next batch just planned: its write-ahead offsets entry is
        # replayed at the next start; never more than that one batch in flight
        assert log_ids(ck, "offsets")[-1] - log_ids(ck, "commits")[-1] in (0, 1), name
