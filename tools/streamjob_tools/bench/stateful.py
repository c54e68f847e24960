"""Scenario 2: stateful aggregation (carrier x month, as in the demo) into a SQL table,
exactly-once (``morphling.result.auto.flush`` false: rows and the batch marker in one
transaction).

The demo's ``carrier_delays_job`` — flights joined with the static airlines CSV, grouped
by carrier and month, upserted into SQLite — reads a topic of ``sizes.s2_records``
flights (336,776: the demo's data) from its start until every record is committed. Reported: records/s (wall clock from START until the
last record is committed) and p50/p99 batch duration (Spark's ``triggerExecution`` of
batches with input).
"""

from __future__ import annotations

import time

from .harness import Bench, ScenarioResult, percentile, progress_breakdown
from .jobs import StreamjobSession, job_props, stream_sql
TOPIC = "bench_flights_s2"


def run(bench: Bench) -> ScenarioResult:
    """Scenario 2 (see the module docstring)."""
    sz = bench.sizes
    res = ScenarioResult("s2", "2 stateful agg -> SQL")
    n = bench.topic(TOPIC, sz.s2_records)
    res.details.update(records=n, records_per_batch=sz.s1_batch, sink="sqlite", runs=[])
    progress = []
    for i in range(bench.repeat):
        s = StreamjobSession(bench)
        try:
            home = s.home.root
            s.run(stream_sql("flights", TOPIC, bench.bootstrap)
                  + f"CREATE TABLE airlines (carrier STRING, name STRING) STORED AS CSV "
                    f"LOCATION '{home}/data/airlines' TBLPROPERTIES(\"skip.header.line.count\"=\"1\");"
                  + "CREATE TABLE carrier_delays (carrier STRING, airline STRING, month INT, "
                    "flights BIGINT, avg_dep_delay DOUBLE, max_arr_delay DOUBLE) TBLPROPERTIES("
                    f"\"connector\"=\"sql\", \"url\"=\"sqlite:///{home}/flights.db\", "
                    "\"primary.key\"=\"carrier,month\");"
                  + 'CREATE STREAMJOB delays AS ("insert into carrier_delays select f.carrier, '
                    "a.name, f.month, count(*), avg(f.dep_delay), max(f.arr_delay) from flights f "
                    'join airlines a on f.carrier = a.carrier group by f.carrier, a.name, f.month") '
                  + job_props(0, sz.s1_batch, **{"morphling.result.auto.flush": "false"}) + ";")
            t0 = time.monotonic()
            s.run("START STREAMJOB delays;")
            s.wait_idle()
            dt = time.monotonic() - t0
            prog = s.progresses("delays")
        finally:
            s.close()
        busy = [p["durationMs"]["triggerExecution"] for p in prog if p.get("numInputRows", 0) > 0]
        progress += prog
        res.figure("streamjob job", "records/s").add(n / dt)
        res.figure("batch duration p50", "ms", "lower").add(percentile(busy, 0.5))
        res.figure("batch duration p99", "ms", "lower").add(percentile(busy, 0.99))
        res.details["runs"].append({"seconds": dt, "batches": len(busy)})
        bench.log(f"  s2 repeat {i + 1}: {n / dt:,.0f} records/s, {len(busy)} batches, "
                  f"p50 {percentile(busy, 0.5):,.0f} ms")
    res.details["breakdown"] = progress_breakdown(progress)
    return res
