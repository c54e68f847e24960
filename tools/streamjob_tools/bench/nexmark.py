"""Nexmark: the standard stream benchmark's queries as streamjob jobs over Kafka.

The generator (:mod:`streamjob_tools.dev.nexmark`, seed 19, 1,000 events/s of event time)
writes ``sizes.nexmark_events`` events into the topics ``nexmark_person``,
``nexmark_auction``, ``nexmark_bid`` and the combined ``nexmark`` (2 partitions each),
timed: its rate to JSON bytes, and into Kafka (generating plus kafka-python's producer).
Then each query of examples/nexmark/queries that has a batch reference
(:data:`streamjob_tools.dev.nexmark.reference.QUERIES`; ``sizes.nexmark_queries`` picks a
subset) runs as a streamjob job in its own home and in-process job manager over the
streams of ``streams_kafka.sql``, with ``streamjob.trigger.interval`` 0 (back-to-back
micro-batches), at most ``BATCH`` records per source per batch, Spark's RocksDB state
store (:data:`STATE_STORE`) and the default checkpoint interval (60 s; Nexmark's Flink
setup checkpoints every 3 minutes, also into RocksDB). One run per query, whatever
``--repeat`` says. Timed
from START STREAMJOB until every event is committed (``streamjob run --until-idle``).
Before them, an unmeasured q0 over 2,000 other events warms the JVM and the Python
workers (as scenario 1's warm-up; not with ``--tiny``). With py-spy installed, the first
query is profiled as scenario 1's job is (:mod:`.profile`).

Reported per query: events/s = all generated events (person + auction + bid, as
Nexmark counts them, although a query reads only its streams' topics) over those
seconds; events/s per core = that over the job's cores, the ``N`` of Spark's
``local[N]`` (2 here), which is what the job may use; beside it the CPU cores it did
use (CPU seconds of this process, Spark's JVM and its Python workers, the broker left
out, over the same seconds: Nexmark's own way of counting cores). Then the result is
compared with the same query computed by pandas over the same events
(:mod:`streamjob_tools.dev.nexmark.reference`); windowed queries first get two sentinel bids
(an hour and two hours later, one per partition, each committed before the next) that
move the watermark past every window. A mismatch or a failed job is a failed figure
(result equals batch = 0), not a crash.

Flink's published per-core figures sit beside ours (:data:`FLINK_PER_CORE`): Nexmark's
own result table, which differs in setup (see :data:`FLINK_SOURCE`).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from .. import REPO
from .harness import (Bench, ScenarioResult, Target, busy_rate, children_pids,
                      progress_breakdown, spark_conf)

EXAMPLES = REPO / "examples" / "nexmark"
SEED = 19
RATE = 1_000
"""Events per second of event time: 1,000,000 events span 1,000 s (100 windows of q7)."""
BATCH = 100_000
STATE_STORE = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
"""The jobs' state store: RocksDB, as Nexmark's Flink setup; Spark's default keeps every
state (q20 holds every bid) in the driver's heap, 1 GiB in local mode."""
PREFIX = "nexmark"
PARTITIONS = 2

RUN_ORDER = ("q0", "q1", "q2", "q3", "q8", "q10", "q13", "q14", "q17", "q18", "q20", "q21",
             "q22", "q5", "q7", "q11")
"""Windowed queries last: their sentinel bids stay in the bid topic (later queries leave
the sentinels' rows out of the comparison too)."""

FLINK_SOURCE = {
    "repository": "https://github.com/nexmark/nexmark",
    "file": "GUIDE_V1.md, section 'Benchmark Results' (column Throughput/Cores)",
    "commit": "6b3646c3baec701f1fa74baf938d235f742e5d3c",
    "setup": "Flink 1.13-2.0, 3 worker nodes of 8 cores, parallelism 8, datagen source "
             "(no Kafka), 100 million events, RocksDB, exactly-once checkpoints every 3 min; "
             "cores = CPU usage measured on the workers; published as 'an example of "
             "result table'",
}
FLINK_PER_CORE = {
    "q0": 155_020, "q1": 157_940, "q2": 175_210, "q3": 152_120, "q5": 22_140,
    "q7": 12_330, "q8": 146_140, "q10": 57_810, "q11": 39_700, "q12": 75_670,
    "q13": 130_730, "q14": 161_230, "q17": 116_800, "q18": 53_700, "q20": 18_980,
    "q21": 98_490, "q22": 129_960,
}
"""Events/s per core of Flink in Nexmark's published table (:data:`FLINK_SOURCE`)."""


def job_cores() -> int:
    """The job's cores: N of the bench's ``local[N]`` master (``local[*]``: all)."""
    master = spark_conf()["spark.master"]
    inside = master[master.find("[") + 1:master.find("]")] if "[" in master else "1"
    return (os.cpu_count() or 1) if inside == "*" else int(inside)


def tree_cpu_s(exclude: set[int]) -> float:
    """CPU seconds (user + system, with reaped children's) of this process and every
    process below it, without the subtrees of ``exclude`` and py-spy's; from
    /proc/<pid>/stat."""
    tick = os.sysconf("SC_CLK_TCK")
    total, todo, seen = 0.0, [os.getpid()], set()
    while todo:
        pid = todo.pop()
        if pid in seen or pid in exclude:
            continue
        seen.add(pid)
        try:
            with open(f"/proc/{pid}/stat") as fh:
                head, _, rest = fh.read().rpartition(")")
            if head.endswith("(py-spy"):  # the profiler of the first query is not the job
                continue
            fields = rest.split()
            total += sum(int(x) for x in fields[11:15]) / tick  # utime stime cutime cstime
        except (OSError, IndexError, ValueError):
            continue
        todo += children_pids(pid)
    return total


def produce_sentinels(bench: Bench, hours: int, prefix: str = PREFIX) -> None:
    """One sentinel bid ``hours`` after the events in each partition of the bid topic,
    flushed (alone, so the broker's end offset shows it)."""
    import json

    from kafka import KafkaProducer

    from ..dev.nexmark import NexmarkConfig, reference

    record = json.dumps(reference.sentinel_bid(NexmarkConfig(seed=SEED, rate=RATE).base_time_ms,
                                               hours)).encode()
    producer = KafkaProducer(bootstrap_servers=bench.bootstrap)
    try:
        for p in range(PARTITIONS):
            producer.send(f"{prefix}_bid", record, partition=p)
            producer.flush()
    finally:
        producer.close()


def run_query(bench: Bench, name: str, data: Path, prefix: str = PREFIX, profile=None) -> dict:
    """Run query ``name`` as a streamjob job until idle; returns seconds, CPU seconds,
    the sink's rows (a Counter, sentinels left out), Spark's per-batch breakdown and
    the source rows per busy second (:func:`.harness.busy_rate`; the sentinels'
    batches included, as Spark keeps them in the same progress). ``prefix``: of the topics;
    ``profile``: a callable started with the job that returns its stopper (py-spy), or
    None."""
    from ..dev.nexmark import reference
    from streamjob.script import read_script, substitute
    from .jobs import StreamjobSession

    ref = reference.QUERIES[name]
    s = StreamjobSession(bench, name=f"{prefix}-{name}")  # a fresh home per run
    job = f"nexmark_{name}_job"
    try:
        env = {"NEXMARK_BROKER": bench.bootstrap, "NEXMARK_TOPIC": prefix,
               "NEXMARK_DIR": str(data), "STREAMJOB_HOME": str(s.home.root)}
        s.run(substitute(read_script(EXAMPLES / "streams_kafka.sql"), env))
        s.run(substitute(read_script(EXAMPLES / "queries" / f"{name}.sql"), env))
        s.run(f'ALTER STREAMJOB {job} SET JOBPROPERTIES("streamjob.trigger.interval"="0", '
              f'"morphling.job.max.records.per.batch"="{BATCH}", '
              f'"spark.sql.streaming.stateStore.providerClass"="{STATE_STORE}");')
        exclude = {bench.broker.process.pid}
        stop_profile = profile() if profile else None
        cpu0 = tree_cpu_s(exclude)
        t0 = time.monotonic()
        s.run(f"START STREAMJOB {job};")
        s.wait_idle()
        seconds = time.monotonic() - t0
        cpu = tree_cpu_s(exclude) - cpu0
        if stop_profile:
            stop_profile()
        if ref.windowed:
            for hours in (1, 2):
                produce_sentinels(bench, hours, prefix)
                s.wait_idle()
        progress = s.progresses(job)
        got = ref.actual(s.home.root / PREFIX / name, s.home.root / "nexmark.db")
        return {"seconds": seconds, "cpu_s": cpu, "rows": got,
                "batches": progress_breakdown(progress), "busy_rate": busy_rate(progress)}
    finally:
        s.close()


def compare(got, want) -> dict:
    """Equality of two row multisets, with the row counts and a few rows of each side
    the other lacks (as text)."""
    missing, extra = want - got, got - want
    return {"equal": got == want, "rows": sum(got.values()), "expected_rows": sum(want.values()),
            "missing": [repr(r)[:200] for r in list(missing)[:3]],
            "unexpected": [repr(r)[:200] for r in list(extra)[:3]]}


def run(bench: Bench) -> ScenarioResult:
    """The Nexmark scenario (see the module docstring)."""
    from ..dev.nexmark import NexmarkConfig, generate, reference, to_kafka
    from ..dev.nexmark.output import write_side_input

    sz = bench.sizes
    res = ScenarioResult("nexmark", "Nexmark over Kafka")
    n = sz.nexmark_events
    names = [q for q in RUN_ORDER if q in (sz.nexmark_queries or RUN_ORDER)]
    cores = job_cores()
    cfg = NexmarkConfig(seed=SEED, rate=RATE)
    data = bench.root / "nexmark"
    write_side_input(data)  # q13's side input (NEXMARK_DIR)
    t0 = time.monotonic()
    stats = to_kafka(cfg, n, bench.bootstrap, PREFIX, partitions=PARTITIONS)
    into_kafka = n / (time.monotonic() - t0)
    res.figure("generator: events to JSON", "events/s").add(stats.events_per_s)
    res.figure("generator: events into Kafka", "events/s").add(into_kafka)
    bench.log(f"  nexmark: {n:,} events ({stats.records}) generated at "
              f"{stats.events_per_s:,.0f}/s, into Kafka at {into_kafka:,.0f}/s")
    if sz.warmup:  # not measured: the JVM's JIT and the Python workers, as in s1
        to_kafka(cfg, 2_000, bench.bootstrap, PREFIX + "_warmup", partitions=PARTITIONS)
        run_query(bench, "q0", data, prefix=PREFIX + "_warmup")
    events = generate(cfg, 0, n)
    res.details.update(events=n, generate_s=round(stats.generate_s, 2),
                       produce_s=round(stats.write_s, 2), seed=SEED, rate_events_per_s_of_event_time=RATE,
                       partitions=PARTITIONS, records_per_batch=BATCH, job_cores=cores,
                       cores_counted_as=f"Spark local[{cores}]: the job's task slots",
                       records=stats.records, flink=FLINK_SOURCE, queries={})
    best = 0.0
    for name in names:
        flink = FLINK_PER_CORE[name]
        rate = res.figure(f"{name}: events/s", "events/s")
        per_core = res.figure(f"{name}: events/s per core (Flink published {flink:,})",
                              "events/s/core")
        used = res.figure(f"{name}: CPU cores used (measured)", "cores", "lower")
        ok = res.figure(f"{name}: result equals batch (pandas)", "1 = equal")
        detail: dict = {"flink_per_core": flink}
        try:
            profiler = getattr(bench, "profiler", None)  # py-spy of the first query
            out = run_query(bench, name, data, profile=profiler("nexmark")
                            if profiler and name == names[0] else None)
            rate.add(n / out["seconds"])
            per_core.add(n / out["seconds"] / cores)
            used.add(out["cpu_s"] / out["seconds"])
            best = max(best, n / out["seconds"])
            ref = reference.QUERIES[name]
            detail.update(seconds=round(out["seconds"], 2), cpu_s=round(out["cpu_s"], 2),
                          batches=out["batches"], busy_rows_per_s=out["busy_rate"],
                          **compare(out["rows"], ref.expected(events.person, events.auction,
                                                              events.bid)))
        except Exception as exc:  # noqa: BLE001 - a failed query is a failed figure
            detail.update(equal=False, error=f"{type(exc).__name__}: {exc}"[:500])
        ok.add(1.0 if detail["equal"] else 0.0)
        res.details["queries"][name] = detail
        res.targets.append(Target(f"{name} result equals the same query in pandas",
                                  ok.name, ">=", 1.0))
        res.targets.append(Target(f"{name} per core >= Flink's published {flink:,}/s",
                                  per_core.name, ">=", flink))
        if "seconds" not in detail:
            bench.log(f"  nexmark {name}: [red]failed[/red]: {detail['error']}")
        else:
            verdict = ("result equals batch" if detail["equal"] else
                       f"[red]MISMATCH[/red]: {detail['rows']:,} rows, "
                       f"{detail['expected_rows']:,} expected")
            bench.log(f"  nexmark {name}: {n / detail['seconds']:,.0f} events/s in "
                      f"{detail['seconds']:.1f} s, {detail['cpu_s'] / detail['seconds']:.2f} "
                      f"cores used, {verdict}")
    if best:
        res.figure("generator into Kafka / fastest query", "ratio").add(into_kafka / best)
        res.targets.append(Target("generator not the bottleneck: into Kafka >= fastest query",
                                  "generator into Kafka / fastest query", ">=", 1.0))
    return res
