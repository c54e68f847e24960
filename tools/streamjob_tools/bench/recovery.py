"""Scenario 4: recovery after SIGKILL, with real ``streamjob`` processes (issue 19).

Two ways back from a SIGKILL, each a job that copies a topic into Parquet with a 1 s
checkpoint interval while a producer thread writes ``sizes.s3_rate`` flights/s to it
(steady state: every interval has new input), killed once it has committed 3
checkpoints; timed from the kill until the catalog records the next completed
checkpoint:

**cold run**: a ``streamjob run job.sql`` process's group is SIGKILLed and the same
command started again at once. The restarted process marks its start-up phases
(:mod:`streamjob.phases`, ``STREAMJOB_PHASES``), so the time splits into: kill ->
process start (fork and exec), -> imports done (interpreter, ``streamjob.cli``), -> JVM
up, -> session ready, -> plan done (the file's statements, the job planned), -> query
started (session clone, data sources, ``writeStream.start()``), -> first batch started
(the first trigger), -> first commit (the batch replayed or read since the kill,
committed and recorded). Target: under 12 s.

**standby**: two ``streamjob server`` processes on one catalog (SQLite: one machine;
PostgreSQL behaves the same, the lease being in the catalog). The first holds the lease
and runs the job; the second stands by, warm (Spark up, its throwaway batch run: it
printed ``standby warm``). The holder's group is SIGKILLed; the standby takes the lease
when it expires (``--lease-ttl`` :data:`STANDBY_TTL_MS`, renewed every
:data:`STANDBY_RENEW_MS`) and resumes the job. Split: **lease expiry** (kill -> the
standby's ``lease taken`` mark), **start** (-> its ``query started``), **catch-up** (->
``first commit``). With repeats, a new standby is started and warmed before each kill.
Target: under 5 s.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from .harness import Bench, ScenarioResult, Target, wait_until
from .jobs import job_props, stream_sql
from .checkpoint_cost import Producer
from streamjob.catalog.records import CheckpointStatus

STREAMJOB = str(Path(sys.executable).with_name("streamjob"))
#: The standby scenario's lease: TTL and renewal period, ms (``streamjob server
#: --lease-ttl/--lease-renew``; the default TTL is 10 s, docs/reliability.md).
STANDBY_TTL_MS = 2000
STANDBY_RENEW_MS = 500
#: The cold run's phases, in order: (figure label, phase it ends at).
COLD_PHASES = (("kill -> process start", "process start"),
               ("process start -> imports done", "imports done"),
               ("imports -> JVM up", "JVM up"),
               ("JVM up -> session ready", "session ready"),
               ("session -> plan done (statements, plan)", "plan done"),
               ("plan -> query started", "query started"),
               ("query started -> first batch started", "first batch started"),
               ("first batch -> first commit", "first commit"))
JOB = "default.copy"


def _job_sql(bench: Bench, topic: str, start: bool = True) -> str:
    names = "year, month, day, carrier, flight, origin, dest, dep_delay, arr_delay"
    return (stream_sql("flights", topic, bench.bootstrap).replace(
            "CREATE STREAM flights", "CREATE STREAM IF NOT EXISTS flights")
            + "\nCREATE TABLE IF NOT EXISTS out_copy (year INT, month INT, day INT, "
              "carrier STRING, flight INT, origin STRING, dest STRING, dep_delay DOUBLE, "
              "arr_delay DOUBLE) STORED AS PARQUET;\n"
            + f'CREATE STREAMJOB IF NOT EXISTS copy AS ("insert into out_copy select {names} '
              f'from flights") ' + job_props(1000, 0) + ";\n"
            + ("START STREAMJOB copy;\n" if start else ""))


def _spawn(home: Path, args: list[str], log_name: str, phases: Path) -> subprocess.Popen:
    log = open(home / log_name, "ab")
    env = {**os.environ, "STREAMJOB_PHASES": str(phases)}
    return subprocess.Popen([STREAMJOB, "--home", str(home), *args], stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True, env=env)


def _kill(proc: subprocess.Popen, sig=signal.SIGKILL) -> None:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)


def _marks(path: Path, pid: int) -> dict[str, float]:
    """Phase -> epoch seconds of process ``pid``'s marks in ``path`` (the job's phases
    and the process's own; the scenario runs one job)."""
    from streamjob.phases import read

    return {m["phase"]: m["at"] for m in read(str(path))
            if m["pid"] == pid and m["job"] in (None, JOB)}


def run(bench: Bench) -> ScenarioResult:
    """Scenario 4 (see the module docstring): the cold run, then the standby."""
    res = ScenarioResult("s4", "4 recovery after SIGKILL")
    res.details.update(rate_records_per_s=bench.sizes.s3_rate, interval_ms=1000, kills=[],
                       standby_kills=[], standby_lease_ttl_ms=STANDBY_TTL_MS,
                       standby_lease_renew_ms=STANDBY_RENEW_MS)
    _cold_run(bench, res)
    _standby(bench, res)
    res.targets = [
        Target("cold `streamjob run` restart under 12 s (kill -> next committed checkpoint)",
               "cold run: kill -> next committed checkpoint", "<=", 12.0),
        Target("standby takeover under 5 s (kill -> the standby's next committed checkpoint)",
               "standby: kill -> next committed checkpoint", "<=", 5.0)]
    return res


def _steady(catalog, uid: str, alive, what: str) -> None:
    """Wait for 3 more checkpoints of ``uid`` (steady state); RuntimeError if ``alive()``
    turns false meanwhile."""
    seen = _latest(catalog, uid)
    target = (seen if seen is not None else -1) + 3
    wait_until(lambda: (_latest(catalog, uid) or -1) >= target or not alive(), 300,
               f"3 checkpoints at steady state ({what})", 0.1)
    if not alive():
        raise RuntimeError(f"{what} exited")


def _next_checkpoint(catalog, uid: str, killed: datetime):
    return wait_until(lambda: next((c for c in catalog.list_checkpoints(uid)
                                    if c.ended_at and c.ended_at > killed
                                    and c.status != CheckpointStatus.EXPIRED), None),
                      300, "the first checkpoint after the kill", 0.05)


def _cold_run(bench: Bench, res: ScenarioResult) -> None:
    topic = bench.new_topic("bench_recovery")
    home = bench.home("recovery").root
    sql = home / "job.sql"
    sql.write_text(_job_sql(bench, topic))
    producer = Producer(bench.bootstrap, topic, bench.flight_records(), bench.sizes.s3_rate)
    producer.start()
    phases = home / "phases.jsonl"
    proc = _spawn(home, ["run", str(sql)], "run.log", phases)
    catalog = None
    try:
        catalog = wait_until(lambda: _open(home), 120, "the catalog of the recovery home")
        uid = wait_until(lambda: _uid(catalog), 180, "job copy in the catalog")
        for k in range(max(1, bench.sizes.s4_kills) * bench.repeat):
            _steady(catalog, uid, lambda: proc.poll() is None, f"streamjob run ({home}/run.log)")
            killed = datetime.now(timezone.utc)
            t_kill, wall_kill = time.monotonic(), time.time()
            _kill(proc)
            proc = _spawn(home, ["run", str(sql)], "run.log", phases)
            ckpt = _next_checkpoint(catalog, uid, killed)
            total = time.monotonic() - t_kill
            res.figure("cold run: kill -> next committed checkpoint", "s", "lower").add(total)
            marks = wait_until(lambda: (m := _marks(phases, proc.pid)).get("first commit")
                               and m, 30, "the restarted run's phase marks", 0.05)
            split, prev = {}, wall_kill
            for label, phase in COLD_PHASES:
                at = marks.get(phase)
                if at is None:
                    continue
                split[label] = max(0.0, at - prev)
                res.figure(f"  {label}", "s", "lower").add(split[label])
                prev = at
            res.details["kills"].append({"total_s": total, "phases_s": split,
                                         "checkpoint_id": ckpt.checkpoint_id,
                                         "batch_ms": ckpt.duration_ms,
                                         "batch_rows": ckpt.input_rows})
            bench.log(f"  s4 cold run kill {k + 1}: {total:.1f} s to the next checkpoint ("
                      + ", ".join(f"{lbl} {s:.1f}" for lbl, s in split.items()) + ")")
    finally:
        _kill(proc, signal.SIGTERM) if proc.poll() is None else None
        producer.finish()
        if catalog is not None:
            catalog.close()


class _Server:
    """A ``streamjob server`` process of the standby scenario, its log and phases file."""

    def __init__(self, home: Path, n: int) -> None:
        self.home, self.log = home, home / f"server{n}.log"
        self.phases = home / f"phases-server{n}.jsonl"
        self.proc = _spawn(home, ["server", "--lease-ttl", str(STANDBY_TTL_MS),
                                  "--lease-renew", str(STANDBY_RENEW_MS)],
                           self.log.name, self.phases)

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def alive(self) -> bool:
        return self.proc.poll() is None

    def wait_for(self, text: str, timeout: float) -> None:
        wait_until(lambda: text in self.output() or not self.alive(), timeout,
                   f"'{text}' from streamjob server ({self.log})", 0.1)
        if text not in self.output():
            raise RuntimeError(f"streamjob server exited: see {self.log}")


def _standby(bench: Bench, res: ScenarioResult) -> None:
    topic = bench.new_topic("bench_standby")
    home = bench.home("standby").root
    producer = Producer(bench.bootstrap, topic, bench.flight_records(), bench.sizes.s3_rate)
    producer.start()
    servers: list[_Server] = []
    catalog = None
    try:
        active = _Server(home, 1)
        servers.append(active)
        active.wait_for("active (holds the job manager lease)", 120)
        standby = _Server(home, 2)
        servers.append(standby)
        sql = home / "job.sql"
        sql.write_text(_job_sql(bench, topic))
        subprocess.run([STREAMJOB, "--home", str(home), "submit", str(sql)], check=True,
                       capture_output=True, timeout=300)
        catalog = wait_until(lambda: _open(home), 60, "the catalog of the standby home")
        uid = wait_until(lambda: _uid(catalog), 60, "job copy in the catalog")
        for k in range(max(1, bench.sizes.s4_kills) * bench.repeat):
            standby.wait_for("standby warm", 300)
            _steady(catalog, uid, active.alive, f"the active server ({active.log})")
            killed = datetime.now(timezone.utc)
            t_kill, wall_kill = time.monotonic(), time.time()
            _kill(active.proc)
            ckpt = _next_checkpoint(catalog, uid, killed)
            total = time.monotonic() - t_kill
            marks = wait_until(lambda: (m := _marks(standby.phases, standby.proc.pid))
                               .get("first commit") and m, 30, "the standby's phase marks", 0.05)
            taken, started = marks["lease taken"], marks.get("query started", marks["lease taken"])
            split = {"lease expiry": taken - wall_kill, "start": started - taken,
                     "catch-up": marks["first commit"] - started}
            res.figure("standby: kill -> next committed checkpoint", "s", "lower").add(total)
            for label, s in split.items():
                res.figure(f"  standby: {label}", "s", "lower").add(max(0.0, s))
            res.details["standby_kills"].append({"total_s": total, "split_s": split,
                                                 "checkpoint_id": ckpt.checkpoint_id,
                                                 "batch_ms": ckpt.duration_ms,
                                                 "batch_rows": ckpt.input_rows})
            bench.log(f"  s4 standby kill {k + 1}: {total:.1f} s to the next checkpoint "
                      f"(lease expiry {split['lease expiry']:.1f}, start {split['start']:.1f}, "
                      f"catch-up {split['catch-up']:.1f})")
            active, standby = standby, _Server(home, len(servers) + 1)
            servers.append(standby)
    finally:
        for s in servers:
            if s.alive():
                _kill(s.proc, signal.SIGTERM)
        producer.finish()
        if catalog is not None:
            catalog.close()


def _open(home: Path):
    from streamjob.catalog import Catalog

    if not (home / "catalog.db").exists():
        return None
    try:
        return Catalog(f"sqlite:///{home / 'catalog.db'}")
    except Exception:  # noqa: BLE001 - created concurrently by the child: retry
        return None


def _uid(catalog) -> str | None:
    job = catalog.get_job("default", "copy")
    return job.uid if job else None


def _latest(catalog, uid: str) -> int | None:
    c = catalog.latest_checkpoint(uid)
    return c.checkpoint_id if c else None
