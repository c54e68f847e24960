"""Scenario 5: many jobs in one job manager.

For each N of ``sizes.s5_jobs``, one in-process :class:`~streamjob.manager.JobManager`
(one SparkSession, as ``streamjob server`` hosts) runs N copies of the scenario-1 job,
each its own stream over the same topic and its own Parquet table, back-to-back batches
of at most ``sizes.s5_batch`` records. Once every job has committed a batch (or after a
ramp of at most ``max(60, 6 x N)`` seconds: a job that has not committed by then counts
as not progressing, it is not waited for), committed offsets are sampled over a window
of at least ``sizes.s5_window_s`` seconds, longer (up to the ramp's limit) until every
job has committed in it (cut short when a job nears the end of the topic). Reported:
total records/s, the slowest job's records/s, how many jobs progressed in the window,
the slowest job's share of the fair share (total / N; "starved" below 0.5), and the
driver's memory (RSS of this Python process plus Spark's JVM, MiB) at the end of the
window, in all and per job (divided by N), and apart from it the PSS of the Python
processes Spark starts below its JVM (workers, one streaming source runner per query;
PSS, as their RSS counts the libraries they share once per process) and the memory per
job with them; the details hold the threads and open file descriptors of the driver's
two processes and the count of those below the JVM.
"""

from __future__ import annotations

import os
import time

from .harness import Bench, ScenarioResult, Target, children_pids, driver_memory_mb, rss_mb
from .jobs import StreamjobSession, committed_rows, parquet_job
from .stateless import TOPIC


def run(bench: Bench) -> ScenarioResult:
    """Scenario 5 (see the module docstring)."""
    sz = bench.sizes
    res = ScenarioResult("s5", "5 jobs in one manager")
    n = bench.topic(TOPIC, sz.s1_records)
    res.details.update(records=n, records_per_batch=sz.s5_batch, window_s=sz.s5_window_s, runs={})
    for count in sz.s5_jobs:
        s = StreamjobSession(bench)
        try:
            names = [f"j{k}" for k in range(count)]
            for name in names:
                parquet_job(s, TOPIC, 0, sz.s5_batch, job=name, start=False)
            t0 = time.monotonic()
            s.run("".join(f"START STREAMJOB {name};" for name in names))
            runners = [s.runner(name) for name in names]

            def rows() -> list[int]:  # a job between attempts (failover) has no query
                return [committed_rows(r.query) if r.query is not None else 0 for r in runners]

            ramp_limit = t0 + max(60.0, 6.0 * count)
            while not all(x > 0 for x in rows()) and time.monotonic() < ramp_limit:
                time.sleep(0.2)  # polling the jobs' progress
            ramp = time.monotonic() - t0
            started = sum(1 for x in rows() if x > 0)
            start = rows()
            w0 = time.monotonic()
            window_cap = max(60.0, 6.0 * count, sz.s5_window_s)
            while True:
                time.sleep(0.5)  # sampling period of the window
                now = rows()
                if max(now) >= 0.9 * n:
                    break
                waited = time.monotonic() - w0
                # at least the window; longer (up to the cap) until every job committed in
                # it, so that a batch slower than the window (a loaded machine) is not
                # taken for a job that does not progress
                if waited >= window_cap or (waited >= sz.s5_window_s
                                            and all(e > b for b, e in zip(start, now))):
                    break
            elapsed = time.monotonic() - w0
            end = [max(e, b) for b, e in zip(start, rows())]
            restarts = sum(max(0, len(s.catalog.list_runs(r.job.uid)) - 1) for r in runners)
            mem = driver_memory_mb(bench.spark())
            handles = process_counts(bench.spark())
        finally:
            s.close()
        rates = [(e - b) / elapsed for b, e in zip(start, end)]
        for rep in range(1):  # one measurement per N (a repeat would double the scenario)
            res.figure(f"{count} jobs: total", "records/s").add(sum(rates))
            res.figure(f"{count} jobs: slowest job", "records/s").add(min(rates))
            res.figure(f"{count} jobs: jobs progressing", "jobs").add(sum(1 for r in rates if r > 0))
            res.figure(f"{count} jobs: driver RSS (python + JVM)", "MiB", "lower").add(mem["total_mb"])
            if mem["total_mb"]:
                res.figure(f"{count} jobs: driver RSS per job", "MiB", "lower").add(
                    mem["total_mb"] / count)
            res.figure(f"{count} jobs: PSS of Spark's Python processes", "MiB", "lower").add(
                handles["pss_below_jvm_mb"])
            if mem["total_mb"]:
                res.figure(f"{count} jobs: memory per job, Python processes included", "MiB",
                           "lower").add((mem["total_mb"] + handles["pss_below_jvm_mb"]) / count)
        res.details["runs"][str(count)] = {"rates": rates, "window_s": elapsed,
                                           "start_all_s": ramp, "memory": mem,
                                           "committed_a_batch_in_ramp": started,
                                           "failovers": restarts, "processes": handles}
        bench.log(f"  s5 {count} jobs: total {sum(rates):,.0f}/s, slowest {min(rates):,.0f}/s, "
                  f"{sum(1 for r in rates if r > 0)} progressing, driver {mem['total_mb'] or 0:,.0f} MiB, "
                  f"{started} committed within {ramp:.1f} s, {restarts} failovers; threads python/JVM "
                  f"{handles['python_threads']}/{handles['jvm_threads']}, fds "
                  f"{handles['python_fds']}/{handles['jvm_fds']}, {handles['processes_below_jvm']} Python "
                  f"processes below the JVM (PSS {handles['pss_below_jvm_mb']:,.0f} MiB, RSS "
                  f"{handles['rss_below_jvm_mb']:,.0f} MiB)")
        if count >= 2:
            res.figure(f"{count} jobs: slowest / fair share", "ratio").add(
                min(rates) / (sum(rates) / count) if sum(rates) else 0.0)
    for count in (c for c in sz.s5_jobs if c >= 10):
        res.targets += [
            Target(f"{count} jobs all progressing", f"{count} jobs: jobs progressing", ">=", count),
            Target(f"{count} jobs none starved: slowest >= 0.5 x fair share",
                   f"{count} jobs: slowest / fair share", ">=", 0.5),
        ]
        if count >= 20:
            res.targets += [
                Target(f"{count} jobs: driver RSS per job <= {RSS_PER_JOB_MB} MiB",
                       f"{count} jobs: driver RSS per job", "<=", RSS_PER_JOB_MB),
                Target(f"{count} jobs: with Spark's Python processes <= {RSS_PER_JOB_MB} MiB/job",
                       f"{count} jobs: memory per job, Python processes included", "<=",
                       RSS_PER_JOB_MB)]
    return res


RSS_PER_JOB_MB = 80
"""Target of memory per job at 20 and more jobs, MiB: 50 jobs in 4 GiB (a choice of
issue 19's work, not a rule from Spark or Slipstream). Judged on the driver's RSS (bench
Python + Spark JVM) over the jobs, and on that plus the PSS of Spark's Python processes
(each query has its own streaming source runner)."""


def process_counts(spark) -> dict[str, int | None]:
    """Threads and open file descriptors of this Python process and of Spark's JVM, the
    JVM's direct children, and the count and summed RSS and PSS (MiB) of every process
    below the JVM (Python worker daemon and workers, streaming source runners), from
    /proc."""
    def status(pid: int, key: str) -> int | None:
        try:
            with open(f"/proc/{pid}/status") as fh:
                return next((int(ln.split()[1]) for ln in fh if ln.startswith(key + ":")), None)
        except OSError:
            return None

    def fds(pid: int) -> int | None:
        try:
            return len(os.listdir(f"/proc/{pid}/fd"))
        except OSError:
            return None

    proc = getattr(getattr(spark.sparkContext, "_gateway", None), "proc", None)
    jvm = proc.pid if proc is not None else None
    below, todo = [], children_pids(jvm) if jvm else []
    while todo:  # every process below the JVM: Python workers, daemons, source runners
        pid = todo.pop()
        below.append(pid)
        todo += children_pids(pid)
    return {"python_threads": status(os.getpid(), "Threads"), "python_fds": fds(os.getpid()),
            "jvm_threads": status(jvm, "Threads") if jvm else None,
            "jvm_fds": fds(jvm) if jvm else None,
            "jvm_children": len(children_pids(jvm)) if jvm else None,
            "processes_below_jvm": len(below),
            "rss_below_jvm_mb": round(sum(rss_mb(p) or 0 for p in below), 1),
            "pss_below_jvm_mb": round(sum(pss_mb(p) or 0 for p in below), 1)}


def pss_mb(pid: int) -> float | None:
    """Proportional set size of ``pid`` in MiB (``/proc/<pid>/smaps_rollup``: shared
    pages divided among the processes mapping them, so a sum over processes does not
    count the libraries they share several times, as a sum of RSS does); None if
    unreadable."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        return None
    return None
