"""Scenario udf: a stateless Kafka -> Parquet job with one scalar Python function, and
with one Hive UDF, against the same job without a function (issue 31, "Speed": the
targets are ratios >= 0.7 for the Python function, >= 0.9 for the Hive UDF).

Each repeat runs, one after the other on scenario 1's topic (the flights replayed to
``sizes.s1_records`` records, 2 partitions; ``sizes.s1_batch`` records per batch):

- **without**: ``insert into out select <the 14 flight columns> from flights``;
- **with one Python UDF**: the same with ``dep_delay`` replaced by
  ``delay_or_zero(dep_delay)``, a function of the home's ``functions/`` directory
  registered by CREATE FUNCTION (``x.fillna(0.0)`` over the pandas Series Spark hands
  it: what is measured is the function's machinery, Arrow batches to a Python worker and
  back, not the user's code);
- **with one Hive UDF**: ``dep_delay`` replaced by ``hive_delay_or_zero(dep_delay)``, the
  Hive (simple) UDF :data:`HIVE_UDF` (``x == null ? 0.0 : x``), compiled at the start of
  the scenario with the JDK's javac against the Hive jars PySpark ships, copied into the
  home's ``functions/`` and registered as a Slipstream script does: ``ADD JAR`` +
  ``CREATE TEMPORARY FUNCTION``. It runs in Spark's JVM (Spark's Hive support), so no
  Python worker is involved.

All are StreamSQL jobs started with ``START STREAMJOB`` in an in-process job manager
(:class:`.jobs.StreamjobSession`), timed from START until every record is committed.
Beside the rates, the CPU seconds of each job (this process, Spark's JVM and its Python
workers; the broker left out): on a machine shared with other work, their ratio tells
what a function costs when the wall clock cannot.
Each ratio (with / without, in records/s) is taken within each repeat, then summarised;
the order of the three jobs rotates from one repeat to the next, so that a load that
grows or shrinks during a run (a shared machine) does not favour one of them.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from .harness import FLIGHT_COLUMNS, Bench, ScenarioResult, Target, progress_breakdown
from .jobs import COLUMN_NAMES, StreamjobSession, job_props, stream_sql
from .stateless import TOPIC

MODULE = '''
import pandas as pd


def delay_or_zero(x: pd.Series) -> pd.Series:
    return x.fillna(0.0)
'''

#: The Hive UDF of the scenario: Hive's simple UDF, which Spark calls by reflection.
HIVE_UDF = """package bench.udf;

public class DelayOrZero extends org.apache.hadoop.hive.ql.exec.UDF {
  public Double evaluate(Double x) {
    return x == null ? 0.0 : x;
  }
}
"""

#: The three jobs: without a function, with the Python one, with the Hive one.
VARIANTS = ("without", "python", "hive")
CALLS = {"python": "delay_or_zero(dep_delay)", "hive": "hive_delay_or_zero(dep_delay)"}


def hive_jar() -> Path:
    """:data:`HIVE_UDF` compiled into a jar of a new temporary directory."""
    from streamjob_tools.dev.hive_jar import build_jar

    base = Path(tempfile.mkdtemp(prefix="bench-hive-udf-"))
    (base / "DelayOrZero.java").write_text(HIVE_UDF)
    return build_jar([base / "DelayOrZero.java"], base / "bench_udfs.jar")


def job_seconds(bench: Bench, topic: str, n: int, batch: int, variant: str,
                jar: Path | None = None) -> tuple[float, float, list]:
    """Seconds from START STREAMJOB until the job (``variant``: one of
    :data:`VARIANTS`) has committed all ``n`` records of ``topic``, the CPU seconds this
    process, Spark's JVM and its Python workers spent meanwhile
    (:func:`.nexmark.tree_cpu_s`, the broker left out), and the job's Spark progress.
    ``jar``: the jar of :data:`HIVE_UDF` (:func:`hive_jar`), for the ``hive`` variant."""
    from .nexmark import tree_cpu_s

    s = StreamjobSession(bench)
    try:
        functions = s.home.root / "functions"
        functions.mkdir(exist_ok=True)
        (functions / "bench_udfs.py").write_text(MODULE)
        register = "CREATE FUNCTION delay_or_zero AS 'bench_udfs:delay_or_zero' RETURNS DOUBLE;"
        if variant == "hive":
            (functions / "bench_udfs.jar").write_bytes(jar.read_bytes())
            register = ("ADD JAR bench_udfs.jar;"
                        "CREATE TEMPORARY FUNCTION hive_delay_or_zero AS 'bench.udf.DelayOrZero';")
        names = ", ".join(CALLS[variant] if variant in CALLS and c == "dep_delay" else c
                          for c in COLUMN_NAMES)
        location = s.home.root / "warehouse" / "default" / "out"
        s.run(stream_sql("flights", topic, bench.bootstrap) + register
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
    res = ScenarioResult("udf", "one scalar Python UDF, one Hive UDF, vs none")
    n = bench.topic(TOPIC, sz.s1_records)
    jar = hive_jar()
    res.details.update(records=n, partitions=2, records_per_batch=sz.s1_batch,
                       function="delay_or_zero(dep_delay): x.fillna(0.0)",
                       hive_function="hive_delay_or_zero(dep_delay): Hive UDF, "
                                     "x == null ? 0.0 : x", runs=[])
    if sz.warmup:  # not measured: the JIT, the Python workers, the metastore, each plan once
        warm = bench.topic("bench_warmup", 2_000)
        for variant in VARIANTS:
            job_seconds(bench, "bench_warmup", warm, 1_000, variant, jar)
    progress = []
    for i in range(bench.repeat):
        seconds, cpu = {}, {}
        k = i % len(VARIANTS)
        for variant in VARIANTS[k:] + VARIANTS[:k]:
            seconds[variant], cpu[variant], prog = job_seconds(bench, TOPIC, n, sz.s1_batch,
                                                               variant, jar)
            if variant == "python":
                progress += prog
        plain_s = seconds["without"]
        res.figure("CPU-s per 100,000 records without", "s", "lower").add(cpu["without"] * 1e5 / n)
        res.figure("CPU-s per 100,000 records with", "s", "lower").add(cpu["python"] * 1e5 / n)
        res.figure("CPU-s per 100,000 records with Hive UDF", "s", "lower").add(
            cpu["hive"] * 1e5 / n)
        res.figure("CPU: without / with", "ratio").add(cpu["without"] / cpu["python"])
        res.figure("CPU: without / with Hive UDF", "ratio").add(cpu["without"] / cpu["hive"])
        res.figure("job without the UDF", "records/s").add(n / plain_s)
        res.figure("job with one scalar Python UDF", "records/s").add(n / seconds["python"])
        res.figure("job with one Hive UDF", "records/s").add(n / seconds["hive"])
        res.figure("with UDF / without", "ratio").add(plain_s / seconds["python"])
        res.figure("with Hive UDF / without", "ratio").add(plain_s / seconds["hive"])
        res.details["runs"].append({"without_s": plain_s, "with_s": seconds["python"],
                                    "with_hive_s": seconds["hive"],
                                    "without_cpu_s": cpu["without"], "with_cpu_s": cpu["python"],
                                    "with_hive_cpu_s": cpu["hive"]})
        bench.log(f"  udf repeat {i + 1}: without {n / plain_s:,.0f}/s, with one UDF "
                  f"{n / seconds['python']:,.0f}/s (ratio {plain_s / seconds['python']:.2f}), "
                  f"with one Hive UDF {n / seconds['hive']:,.0f}/s (ratio "
                  f"{plain_s / seconds['hive']:.2f}); CPU-s {cpu['without']:.1f} / "
                  f"{cpu['python']:.1f} / {cpu['hive']:.1f}")
    res.details["breakdown"] = progress_breakdown(progress)
    res.targets = [Target("one scalar Python UDF keeps >= 0.7 of the throughput",
                          "with UDF / without", ">=", 0.7),
                   Target("one Hive UDF keeps >= 0.9 of the throughput",
                          "with Hive UDF / without", ">=", 0.9)]
    return res
