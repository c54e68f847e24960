"""Scenario udf: a stateless Kafka -> Parquet job with one scalar Python function
against the same job without it (issue 31, "Speed": the target is a ratio >= 0.7).

Each repeat runs, one after the other on scenario 1's topic (the flights replayed to
``sizes.s1_records`` records, 2 partitions; ``sizes.s1_batch`` records per batch):

- **without**: ``insert into out select <the 14 flight columns> from flights``;
- **with one UDF**: the same with ``dep_delay`` replaced by ``delay_or_zero(dep_delay)``,
  a function of the home's ``functions/`` directory registered by CREATE FUNCTION
  (``x.fillna(0.0)`` over the pandas Series Spark hands it: what is measured is the
  function's machinery, Arrow batches to a Python worker and back, not the user's code).

Both are StreamSQL jobs started with ``START STREAMJOB`` in an in-process job manager
(:class:`.jobs.StreamjobSession`), timed from START until every record is committed.
Beside the rates, the CPU seconds of each job (this process, Spark's JVM and its Python
workers; the broker left out): on a machine shared with other work, their ratio tells
what the function costs when the wall clock cannot.
The ratio (with / without, in records/s) is taken within each repeat, then summarised;
the two jobs swap order from one repeat to the next, so that a load that grows or
shrinks during a run (a shared machine) does not favour one of them.
"""

from __future__ import annotations

import time

from .harness import FLIGHT_COLUMNS, Bench, ScenarioResult, Target, progress_breakdown
from .jobs import COLUMN_NAMES, StreamjobSession, job_props, stream_sql
from .stateless import TOPIC

MODULE = '''
import pandas as pd


def delay_or_zero(x: pd.Series) -> pd.Series:
    return x.fillna(0.0)
'''


def job_seconds(bench: Bench, topic: str, n: int, batch: int,
                with_udf: bool) -> tuple[float, float, list]:
    """Seconds from START STREAMJOB until the job (with or without the function) has
    committed all ``n`` records of ``topic``, the CPU seconds this process, Spark's JVM
    and its Python workers spent meanwhile (:func:`.nexmark.tree_cpu_s`, the broker
    left out), and the job's Spark progress."""
    from .nexmark import tree_cpu_s

    s = StreamjobSession(bench)
    try:
        functions = s.home.root / "functions"
        functions.mkdir(exist_ok=True)
        (functions / "bench_udfs.py").write_text(MODULE)
        names = ", ".join("delay_or_zero(dep_delay)" if with_udf and c == "dep_delay" else c
                          for c in COLUMN_NAMES)
        location = s.home.root / "warehouse" / "default" / "out"
        s.run(stream_sql("flights", topic, bench.bootstrap)
              + "CREATE FUNCTION delay_or_zero AS 'bench_udfs:delay_or_zero' RETURNS DOUBLE;"
              + f"CREATE TABLE out ({FLIGHT_COLUMNS}) STORED AS PARQUET LOCATION '{location}';"
              + f'CREATE STREAMJOB copy AS ("insert into out select {names} from flights") '
              + job_props(0, batch) + ";")
        exclude = {bench.broker.process.pid}
        cpu0, t0 = tree_cpu_s(exclude), time.monotonic()
        s.run("START STREAMJOB copy;")
        s.wait_idle()
        return (time.monotonic() - t0, tree_cpu_s(exclude) - cpu0, s.progresses("copy"))
    finally:
        s.close()


def run(bench: Bench) -> ScenarioResult:
    """Scenario udf (see the module docstring)."""
    sz = bench.sizes
    res = ScenarioResult("udf", "one scalar Python UDF vs none")
    n = bench.topic(TOPIC, sz.s1_records)
    res.details.update(records=n, partitions=2, records_per_batch=sz.s1_batch,
                       function="delay_or_zero(dep_delay): x.fillna(0.0)", runs=[])
    if sz.warmup:  # not measured: the JIT, the Python workers, both plans once
        warm = bench.topic("bench_warmup", 2_000)
        for with_udf in (False, True):
            job_seconds(bench, "bench_warmup", warm, 1_000, with_udf)
    progress = []
    for i in range(bench.repeat):
        seconds, cpu = {}, {}
        for with_udf in ((False, True) if i % 2 == 0 else (True, False)):
            seconds[with_udf], cpu[with_udf], prog = job_seconds(bench, TOPIC, n, sz.s1_batch,
                                                                 with_udf)
            if with_udf:
                progress += prog
        plain_s, udf_s = seconds[False], seconds[True]
        res.figure("CPU-s per 100,000 records without", "s", "lower").add(cpu[False] * 1e5 / n)
        res.figure("CPU-s per 100,000 records with", "s", "lower").add(cpu[True] * 1e5 / n)
        res.figure("CPU: without / with", "ratio").add(cpu[False] / cpu[True])
        res.figure("job without the UDF", "records/s").add(n / plain_s)
        res.figure("job with one scalar Python UDF", "records/s").add(n / udf_s)
        res.figure("with UDF / without", "ratio").add(plain_s / udf_s)
        res.details["runs"].append({"without_s": plain_s, "with_s": udf_s,
                                    "without_cpu_s": cpu[False], "with_cpu_s": cpu[True]})
        bench.log(f"  udf repeat {i + 1}: without {n / plain_s:,.0f}/s, with one UDF "
                  f"{n / udf_s:,.0f}/s, ratio {plain_s / udf_s:.2f}; CPU-s "
                  f"{cpu[False]:.1f} / {cpu[True]:.1f} ({cpu[False] / cpu[True]:.2f})")
    res.details["breakdown"] = progress_breakdown(progress)
    res.targets = [Target("one scalar Python UDF keeps >= 0.7 of the throughput",
                          "with UDF / without", ">=", 0.7)]
    return res
