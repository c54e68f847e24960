"""Scenario 1: stateless Kafka -> Parquet (and Delta, Iceberg), a streamjob job against its anchors.

Each repeat runs, one after the other on the same topic (the flights replayed to
``sizes.s1_records`` records, 2 partitions):

- **raw consumer**: one kafka-python consumer reading every record, no Spark, no
  decoding (the client library streamjob is built on);
- **raw confluent-kafka consumer**: the same with librdkafka's consumer (a C client: the
  rate a Python program reaches with the fastest client there is), when installed;
- **hand-written**: ``spark.readStream`` of the same Kafka source class into Parquet,
  no catalog and no manager (:func:`.jobs.handwritten_job`);
- **hand-written, recordParser=kafka-python** (``--compare-parser``): the same job
  reading with kafka-python's consumer alone, the source's path before the bulk decoder;
- **streamjob**: the same copy as a StreamSQL job started with ``START STREAMJOB`` in an
  in-process job manager (what ``streamjob run`` does), until every record is committed;
- **streamjob into Delta**: the same job into a Delta table (``STORED AS DELTA``: one
  Delta commit per micro-batch with its app transaction), beside the Parquet one; the
  ``delta_breakdown`` detail holds its per-batch times (``addBatch``: the commit).
- **streamjob into Iceberg**: the same job into an Iceberg table (``STORED AS ICEBERG``
  in the home's own SQL catalog: one snapshot per micro-batch with the job's app id and
  batch id in its summary); ``iceberg_breakdown`` its per-batch times.

Rates are records / wall-clock seconds from the start of each reader until its last
record is committed. Ratios are taken within each repeat (side by side), then summarised.
Once per run, the source's bulk record parser and kafka-python's parse the same fetched
bytes in this process (:mod:`.parsing`): a parse-only ratio.
"""

from __future__ import annotations

import shutil
import time

from .harness import Bench, ScenarioResult, Target, progress_breakdown, wait_until
from .jobs import (StreamjobSession, committed_rows, confluent_consumer, handwritten_job,
                   parquet_job, raw_consumer)

TOPIC = "bench_flights"


def handwritten_seconds(bench: Bench, n: int, batch: int, tag: str, source=None,
                        topic: str = TOPIC, options: dict | None = None) -> tuple[float, list]:
    """Seconds the hand-written job takes to commit all ``n`` records of ``topic``, and
    its progress (Spark is started before the clock starts)."""
    from .harness import progresses_of

    out = bench.root / "s1" / tag
    bench.spark()
    t0 = time.monotonic()
    q = handwritten_job(bench, topic, batch, out, source=source, options=options)
    try:
        wait_until(lambda: committed_rows(q) >= n or q.exception(), 3600, "the hand-written job")
        if q.exception():
            raise RuntimeError(f"hand-written job failed: {q.exception()}")
        return time.monotonic() - t0, progresses_of(q)
    finally:
        q.stop()
        shutil.rmtree(out.parent / tag, ignore_errors=True)


def streamjob_seconds(bench: Bench, n: int, batch: int, profile=None,
                      topic: str = TOPIC, stored_as: str = "PARQUET",
                      commits: list | None = None) -> tuple[float, list]:
    """Seconds from START STREAMJOB until the job committed all ``n`` records of
    ``topic`` into a table ``STORED AS stored_as`` (Parquet, or DELTA), and its Spark
    progress. ``profile``: a callable started with the job (py-spy), or None.
    ``commits``: gets the ms of each of :data:`COMMITS` commits on the job's table
    afterwards (:func:`commit_ms`: empty ones on a Delta table; :func:`iceberg_commit_ms`:
    one row each on an Iceberg table)."""
    s = StreamjobSession(bench)
    try:
        location = parquet_job(s, topic, 0, batch, start=False, stored_as=stored_as)
        stop_profile = profile() if profile else None
        t0 = time.monotonic()
        s.run("START STREAMJOB copy;")
        s.wait_idle()
        dt = time.monotonic() - t0
        if stop_profile:
            stop_profile()
        if commits is not None:
            commits += (iceberg_commit_ms(s) if stored_as == "ICEBERG"
                        else commit_ms(str(location)))
        return dt, s.progresses("copy")
    finally:
        s.close()


COMMITS = 20
"""Empty commits timed on the Delta job's table (:func:`commit_ms`)."""


def commit_ms(path: str) -> list[float]:
    """The ms of :data:`COMMITS` micro-batch commits without rows on the Delta table at
    ``path`` (as the job left it: its data files and log) through the job's own sink
    (:class:`streamjob.connectors.delta.sink.DeltaSink`, a new app id): the fixed cost
    one micro-batch's Delta commit adds (the table brought forward, the app transaction
    looked up, the log entry written), apart from writing the rows' files."""
    import pyarrow as pa

    from streamjob.connectors.delta.sink import DeltaSink
    from streamjob.connectors.delta.spec import DeltaTableSpec

    from .harness import FLIGHT_COLUMNS

    columns = [dict(zip(("name", "type"), c.split())) for c in FLIGHT_COLUMNS.split(", ")]
    sink = DeltaSink(DeltaTableSpec(path), columns, "bench.commit", "bench-commit:0", True)
    empty = pa.Table.from_batches([], sink.schema)
    out = []
    for batch in range(COMMITS):
        t0 = time.perf_counter()
        sink.write_arrow(empty, batch)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def iceberg_commit_ms(s: StreamjobSession) -> list[float]:
    """The ms of :data:`COMMITS` micro-batch commits of one row each on the Iceberg
    table the job ``copy`` of session ``s`` wrote (``out_copy``), through the job's own
    sink (:class:`streamjob.connectors.iceberg.sink.IcebergSink`, a new app id): the
    fixed cost of one snapshot (a data file, a manifest, a manifest list, a metadata
    file and the catalog's pointer; an empty batch commits nothing)."""
    import pyarrow as pa

    from streamjob.connectors import spec as cspec
    from streamjob.connectors.iceberg.sink import IcebergSink

    info = s.catalog.get_table("default", "out_copy")
    spec = cspec.spec_of_table(info, str(s.home.table_location("default", "out_copy")))
    sink = IcebergSink(spec, info.columns, "bench.commit", "bench-commit:0", True)
    one = pa.Table.from_pylist([{c["name"]: None for c in info.columns}], sink.schema)
    out = []
    for batch in range(COMMITS):
        t0 = time.perf_counter()
        sink.write_arrow(one, batch)
        out.append((time.perf_counter() - t0) * 1000)
    return out


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
        if getattr(bench, "compare_parser", False):
            handwritten_seconds(bench, warm, 1_000, "warm-client", topic="bench_warmup",
                                options={"recordParser": "kafka-python"})
        streamjob_seconds(bench, warm, 1_000, topic="bench_warmup")
        streamjob_seconds(bench, warm, 1_000, topic="bench_warmup", stored_as="DELTA")
        streamjob_seconds(bench, warm, 1_000, topic="bench_warmup", stored_as="ICEBERG")
    progress, delta_progress, iceberg_progress = [], [], []
    _parse_figures(bench, res)
    for i in range(bench.repeat):
        raw_s = raw_consumer(bench.bootstrap, TOPIC, n)
        rdk_s = confluent_consumer(bench.bootstrap, TOPIC, n)
        hand_s, _ = handwritten_seconds(bench, n, sz.s1_batch, f"hand{i}")
        client_s = None
        if getattr(bench, "compare_parser", False):
            client_s, _ = handwritten_seconds(bench, n, sz.s1_batch, f"client{i}",
                                              options={"recordParser": "kafka-python"})
            res.figure("hand-written, recordParser=kafka-python", "records/s").add(n / client_s)
            res.figure("bulk / kafka-python parser (hand-written)", "ratio").add(client_s / hand_s)
        old_s = None
        if legacy is not None:
            old_s, _ = handwritten_seconds(bench, n, sz.s1_batch, f"legacy{i}", source=legacy)
        sj_s, prog = streamjob_seconds(bench, n, sz.s1_batch,
                                       profile=bench.profiler("s1") if i == 0 else None)
        progress += prog
        prog_parquet = prog
        commits: list[float] = []
        delta_s, prog = streamjob_seconds(bench, n, sz.s1_batch, stored_as="DELTA",
                                          commits=commits)
        if commits:
            import statistics

            res.figure("Delta commit per micro-batch (no rows, median)", "ms",
                       better="lower").add(statistics.median(commits))
        delta_progress += prog
        res.figure("streamjob job into Delta", "records/s").add(n / delta_s)
        res.figure("Delta / Parquet sink (streamjob)", "ratio").add(sj_s / delta_s)
        _commit_cost(res, prog, prog_parquet)
        commits = []
        ice_s, prog = streamjob_seconds(bench, n, sz.s1_batch, stored_as="ICEBERG",
                                        commits=commits)
        if commits:
            import statistics

            res.figure("Iceberg commit per micro-batch (1 row, median)", "ms",
                       better="lower").add(statistics.median(commits))
        iceberg_progress += prog
        res.figure("streamjob job into Iceberg", "records/s").add(n / ice_s)
        res.figure("Iceberg / Parquet sink (streamjob)", "ratio").add(sj_s / ice_s)
        _commit_cost(res, prog, None, "Iceberg")
        res.figure("raw kafka-python consumer", "records/s").add(n / raw_s)
        if rdk_s is not None:
            res.figure("raw confluent-kafka consumer", "records/s").add(n / rdk_s)
        res.figure("hand-written PySpark job", "records/s").add(n / hand_s)
        if old_s is not None:
            res.figure("hand-written, source before optimisation", "records/s").add(n / old_s)
            res.figure("source after/before (hand-written)", "ratio").add(old_s / hand_s)
        res.figure("streamjob job", "records/s").add(n / sj_s)
        res.figure("streamjob / raw consumer", "ratio").add(raw_s / sj_s)
        if rdk_s is not None:
            res.figure("streamjob / raw confluent-kafka", "ratio").add(rdk_s / sj_s)
        res.figure("streamjob / hand-written", "ratio").add(hand_s / sj_s)
        bench.log(f"  s1 repeat {i + 1}: raw {n / raw_s:,.0f}/s"
                  + (f", confluent-kafka {n / rdk_s:,.0f}/s" if rdk_s else "")
                  + f", hand-written {n / hand_s:,.0f}/s"
                  + (f", before-optimisation {n / old_s:,.0f}/s" if old_s else "")
                  + f", streamjob {n / sj_s:,.0f}/s, streamjob into Delta {n / delta_s:,.0f}/s"
                  + f", into Iceberg {n / ice_s:,.0f}/s")
    res.details["breakdown"] = progress_breakdown(progress)
    # the Delta sink's commit cost per micro-batch: its addBatch beside the Parquet one
    res.details["delta_breakdown"] = progress_breakdown(delta_progress)
    res.details["iceberg_breakdown"] = progress_breakdown(iceberg_progress)
    res.targets = [
        Target("streamjob >= 2x raw kafka-python consumer", "streamjob / raw consumer", ">=", 2.0),
        Target("streamjob >= raw confluent-kafka consumer", "streamjob / raw confluent-kafka",
               ">=", 1.0),
        Target("manager costs <= 5% vs hand-written (ratio >= 0.95)", "streamjob / hand-written",
               ">=", 0.95),
        Target("Delta sink >= 0.8x the Parquet sink", "Delta / Parquet sink (streamjob)",
               ">=", 0.8),
        Target("Iceberg sink >= 0.8x the Parquet sink", "Iceberg / Parquet sink (streamjob)",
               ">=", 0.8),
    ]
    return res


def _commit_cost(res: ScenarioResult, lake: list, parquet: list | None,
                 kind: str = "Delta") -> None:
    """The mean ``addBatch`` per micro-batch (ms: Spark's time in the sink, writing and
    committing) of the ``kind`` (Delta, Iceberg) job and, given its progress, of the
    Parquet job of one repeat, side by side (the commit alone: :func:`commit_ms`,
    :func:`iceberg_commit_ms`)."""
    d = progress_breakdown(lake).get("mean_ms", {}).get("addBatch")
    if d is not None:
        res.figure(f"{kind} sink: addBatch per micro-batch", "ms", better="lower").add(d)
    if parquet is None:
        return
    p = progress_breakdown(parquet).get("mean_ms", {}).get("addBatch")
    if p is not None:
        res.figure("Parquet sink: addBatch per micro-batch", "ms", better="lower").add(p)


def _parse_figures(bench: Bench, res: ScenarioResult) -> None:
    """Parse-only rates of kafka-python and the bulk parser on the same fetched bytes of
    partition 0 (:mod:`.parsing`), and their ratio."""
    from .parsing import fetched_bytes, parse_rates

    data, records = fetched_bytes(bench.bootstrap, TOPIC)
    if not records:
        return
    client, bulk = parse_rates(data)
    res.details["parse_sample"] = {"bytes": len(data), "records": records}
    res.figure("parse only: kafka-python", "records/s").add(client)
    res.figure("parse only: bulk parser", "records/s").add(bulk)
    res.figure("parse only: bulk / kafka-python", "ratio").add(bulk / client)
    bench.log(f"  s1 parse only ({records:,} records, same bytes): kafka-python "
              f"{client:,.0f}/s, bulk {bulk:,.0f}/s ({bulk / client:.1f}x)")
