"""Scenario 1: stateless Kafka -> Parquet, a streamjob job against its two anchors.

Each repeat runs, one after the other on the same topic (the flights replayed to
``sizes.s1_records`` records, 2 partitions):

- **raw consumer**: one kafka-python consumer reading every record, no Spark, no
  decoding (the client library's limit);
- **hand-written**: ``spark.readStream`` of the same Kafka source class into Parquet,
  no catalog and no manager (:func:`.jobs.handwritten_job`);
- **streamjob**: the same copy as a StreamSQL job started with ``START STREAMJOB`` in an
  in-process job manager (what ``streamjob run`` does), until every record is committed.

Rates are records / wall-clock seconds from the start of each reader until its last
record is committed. Ratios are taken within each repeat (side by side), then summarised.
"""

from __future__ import annotations

import shutil
import time

from .harness import Bench, ScenarioResult, Target, progress_breakdown, wait_until
from .jobs import StreamjobSession, committed_rows, handwritten_job, parquet_job, raw_consumer

TOPIC = "bench_flights"


def handwritten_seconds(bench: Bench, n: int, batch: int, tag: str, source=None,
                        topic: str = TOPIC) -> tuple[float, list]:
    """Seconds the hand-written job takes to commit all ``n`` records of ``topic``, and
    its progress (Spark is started before the clock starts)."""
    from .harness import progresses_of

    out = bench.root / "s1" / tag
    bench.spark()
    t0 = time.monotonic()
    q = handwritten_job(bench, topic, batch, out, source=source)
    try:
        wait_until(lambda: committed_rows(q) >= n or q.exception(), 3600, "the hand-written job")
        if q.exception():
            raise RuntimeError(f"hand-written job failed: {q.exception()}")
        return time.monotonic() - t0, progresses_of(q)
    finally:
        q.stop()
        shutil.rmtree(out.parent / tag, ignore_errors=True)


def streamjob_seconds(bench: Bench, n: int, batch: int, profile=None,
                      topic: str = TOPIC) -> tuple[float, list]:
    """Seconds from START STREAMJOB until the job committed all ``n`` records of
    ``topic``, and its Spark progress. ``profile``: a callable started with the job
    (py-spy), or None."""
    s = StreamjobSession(bench)
    try:
        parquet_job(s, topic, 0, batch, start=False)
        stop_profile = profile() if profile else None
        t0 = time.monotonic()
        s.run("START STREAMJOB copy;")
        s.wait_idle()
        dt = time.monotonic() - t0
        if stop_profile:
            stop_profile()
        return dt, s.progresses("copy")
    finally:
        s.close()


def run(bench: Bench) -> ScenarioResult:
    """Scenario 1 (see the module docstring)."""
    sz = bench.sizes
    res = ScenarioResult("s1", "1 stateless Kafka->Parquet")
    n = bench.topic(TOPIC, sz.s1_records)
    res.details.update(records=n, partitions=2, records_per_batch=sz.s1_batch, interval_ms=0)
    legacy = getattr(bench, "legacy_source", None)
    # warm-up, not measured: the JVM's JIT, Python workers, both code paths once
    if sz.warmup:
        warm = bench.topic("bench_warmup", 2_000)
        handwritten_seconds(bench, warm, 1_000, "warm-hand", topic="bench_warmup")
        if legacy is not None:
            handwritten_seconds(bench, warm, 1_000, "warm-legacy", source=legacy,
                                topic="bench_warmup")
        streamjob_seconds(bench, warm, 1_000, topic="bench_warmup")
    progress = []
    for i in range(bench.repeat):
        raw_s = raw_consumer(bench.bootstrap, TOPIC, n)
        hand_s, _ = handwritten_seconds(bench, n, sz.s1_batch, f"hand{i}")
        old_s = None
        if legacy is not None:
            old_s, _ = handwritten_seconds(bench, n, sz.s1_batch, f"legacy{i}", source=legacy)
        sj_s, prog = streamjob_seconds(bench, n, sz.s1_batch,
                                       profile=bench.profiler("s1") if i == 0 else None)
        progress += prog
        res.figure("raw kafka-python consumer", "records/s").add(n / raw_s)
        res.figure("hand-written PySpark job", "records/s").add(n / hand_s)
        if old_s is not None:
            res.figure("hand-written, source before optimisation", "records/s").add(n / old_s)
            res.figure("source after/before (hand-written)", "ratio").add(old_s / hand_s)
        res.figure("streamjob job", "records/s").add(n / sj_s)
        res.figure("streamjob / raw consumer", "ratio").add(raw_s / sj_s)
        res.figure("streamjob / hand-written", "ratio").add(hand_s / sj_s)
        bench.log(f"  s1 repeat {i + 1}: raw {n / raw_s:,.0f}/s, hand-written {n / hand_s:,.0f}/s"
                  + (f", before-optimisation {n / old_s:,.0f}/s" if old_s else "")
                  + f", streamjob {n / sj_s:,.0f}/s")
    res.details["breakdown"] = progress_breakdown(progress)
    res.targets = [
        Target("streamjob >= 0.8 x raw consumer rate", "streamjob / raw consumer", ">=", 0.8),
        Target("manager costs <= 5% vs hand-written (ratio >= 0.95)", "streamjob / hand-written",
               ">=", 0.95),
    ]
    return res
