"""Scenario 5: many jobs in one job manager.

For each N of ``sizes.s5_jobs``, one in-process :class:`~streamjob.manager.JobManager`
(one SparkSession, as ``streamjob server`` hosts) runs N copies of the scenario-1 job,
each its own stream over the same topic and its own Parquet table, back-to-back batches
of at most ``sizes.s5_batch`` records. Once every job has committed a batch (or after a
ramp of at most ``max(60, 6 x N)`` seconds: a job that has not committed by then counts
as not progressing, it is not waited for), committed offsets are sampled over a window
of ``sizes.s5_window_s`` seconds (cut short when a job nears the end of the topic). Reported: total records/s, the slowest job's records/s,
how many jobs progressed in the window, and the driver's memory (RSS of this Python
process plus Spark's JVM, MiB) at the end of the window.
"""

from __future__ import annotations

import time

from .harness import Bench, ScenarioResult, Target, driver_memory_mb
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
            while time.monotonic() - w0 < sz.s5_window_s:
                time.sleep(0.5)  # sampling period of the window
                if max(rows()) >= 0.9 * n:
                    break
            elapsed = time.monotonic() - w0
            end = [max(e, b) for b, e in zip(start, rows())]
            restarts = sum(max(0, len(s.catalog.list_runs(r.job.uid)) - 1) for r in runners)
            mem = driver_memory_mb(bench.spark())
        finally:
            s.close()
        rates = [(e - b) / elapsed for b, e in zip(start, end)]
        for rep in range(1):  # one measurement per N (a repeat would double the scenario)
            res.figure(f"{count} jobs: total", "records/s").add(sum(rates))
            res.figure(f"{count} jobs: slowest job", "records/s").add(min(rates))
            res.figure(f"{count} jobs: jobs progressing", "jobs").add(sum(1 for r in rates if r > 0))
            res.figure(f"{count} jobs: driver RSS (python + JVM)", "MiB", "lower").add(mem["total_mb"])
        res.details["runs"][str(count)] = {"rates": rates, "window_s": elapsed,
                                           "start_all_s": ramp, "memory": mem,
                                           "committed_a_batch_in_ramp": started,
                                           "failovers": restarts}
        bench.log(f"  s5 {count} jobs: total {sum(rates):,.0f}/s, slowest {min(rates):,.0f}/s, "
                  f"{sum(1 for r in rates if r > 0)} progressing, driver {mem['total_mb'] or 0:,.0f} MiB, "
                  f"{started} committed within {ramp:.1f} s, {restarts} failovers")
        if count == 10:
            res.figure("10 jobs: slowest / fair share", "ratio").add(
                min(rates) / (sum(rates) / count) if sum(rates) else 0.0)
    if 10 in sz.s5_jobs:
        res.targets = [
            Target("10 jobs all progressing", "10 jobs: jobs progressing", ">=", 10),
            Target("none starved: slowest >= 0.5 x fair share", "10 jobs: slowest / fair share",
                   ">=", 0.5),
        ]
    return res
