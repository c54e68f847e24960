"""Scenario 3: latency and cost at each checkpoint interval — output does not wait for it.

For each checkpoint interval of ``sizes.s3_intervals_ms`` (0 = every micro-batch a
checkpoint, 1 s, 5 s, 60 s), with the default trigger (``streamjob.trigger.interval``,
500 ms), and once more at the longest interval with ``streamsql.use.eventmode`` (trigger
0), a fresh streamjob job copies a fresh topic into Parquet while a producer thread
writes flights at a steady ``sizes.s3_rate`` records/s for ``sizes.s3_window_s`` seconds.
Each record carries its production time (``ts``, ms since the epoch).

- **end-to-end latency**: for every record, the time its batch's entry in the Parquet
  sink's manifest (``_spark_metadata/<batch>``, what makes files visible to readers)
  was written minus ``ts``; p50 and p99. DESIGN §4: about a second, whatever the
  checkpoint interval (before the two cadences, p50 was about half the interval).
- **throughput**: rows per second of busy time (rows of batches with input over the sum
  of their ``triggerExecution``): the engine's capacity at the batch size the trigger
  makes, waits between triggers excluded; as a ratio to the longest interval's.
- **checkpoints**: recorded in the window, beside the micro-batches that carried rows.

Tansu's end offset lags by the last produced record batch (TESTING.md), so the producer
sends small batches (``linger_ms`` 5) and ends with one record alone.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

from .harness import (FLIGHT_COLUMNS, Bench, ScenarioResult, Target, busy_rate, now_ms,
                      percentile, progress_breakdown)
from .jobs import StreamjobSession, parquet_job

COLUMNS = FLIGHT_COLUMNS + ", ts BIGINT"


class Producer(threading.Thread):
    """Produces flights with a ``ts`` field (ms since the epoch, at send time) to
    ``topic`` at ``rate`` records/s round-robin over 2 partitions until :meth:`finish`."""

    def __init__(self, bootstrap: str, topic: str, records: list[bytes], rate: int) -> None:
        super().__init__(daemon=True, name=f"producer-{topic}")
        self.bootstrap, self.topic, self.records, self.rate = bootstrap, topic, records, rate
        self.sent = 0
        self._done = threading.Event()
        self.error: BaseException | None = None

    def finish(self) -> int:
        """Stop producing, send one last record per partition alone (Tansu's end
        offset) and return the count sent."""
        self._done.set()
        self.join(60)
        if self.error:
            raise self.error
        return self.sent

    def run(self) -> None:
        from kafka import KafkaProducer

        try:
            producer = KafkaProducer(bootstrap_servers=self.bootstrap, linger_ms=5, acks=1,
                                     batch_size=256 << 10)
            t0 = time.monotonic()
            tick = 0.02  # send in 50 slices per second
            while not self._done.is_set():
                due = int((time.monotonic() - t0) * self.rate)
                while self.sent < due:
                    self._send(producer, self.sent % 2)
                producer.flush()
                time.sleep(tick)  # the producer's pace, not a wait for an event
            for p in (0, 1):
                self._send(producer, p)
                producer.flush()
            producer.close()
        except BaseException as exc:  # noqa: BLE001 - reported by finish()
            self.error = exc

    def _send(self, producer, partition: int) -> None:
        rec = self.records[self.sent % len(self.records)]
        value = b'{"ts":%d,' % now_ms() + rec[1:]
        producer.send(self.topic, value, partition=partition)
        self.sent += 1


def sink_latencies(location: Path) -> list[float]:
    """Per record, ms from its ``ts`` to the write of the manifest entry of its batch
    (``_spark_metadata/<n>`` or ``<n>.compact``) in the Parquet table at ``location``."""
    import pyarrow.parquet as pq

    meta = location / "_spark_metadata"
    entries = []
    for name in os.listdir(meta):
        stem = name.split(".")[0]
        if stem.isdigit():
            entries.append((int(stem), meta / name))
    seen: set[str] = set()
    out: list[float] = []
    for _, path in sorted(entries):
        visible_ms = os.stat(path).st_mtime_ns / 1e6
        for line in path.read_text().splitlines()[1:]:
            entry = json.loads(line)
            if entry.get("action", "add") != "add" or entry["path"] in seen:
                continue
            seen.add(entry["path"])
            file = entry["path"].removeprefix("file://").removeprefix("file:")
            ts = pq.read_table(file, columns=["ts"]).column("ts").to_pylist()
            out += [visible_ms - t for t in ts if t is not None]
    return out


def one_interval(bench: Bench, interval_ms: int, repeat: int,
                 props: dict[str, str] | None = None) -> dict:
    """Run the job at checkpoint interval ``interval_ms`` (and further job ``props``)
    once; returns throughput, latencies, checkpoints and progress."""
    sz = bench.sizes
    tag = "_event" if props else ""
    topic = bench.new_topic(f"bench_ckpt_{interval_ms}{tag}_{repeat}")
    s = StreamjobSession(bench)
    try:  # every checkpoint kept, so the window's checkpoints can be counted
        location = parquet_job(s, topic, interval_ms, 0, columns=COLUMNS,
                               props={"morphling.checkpoint.retained": "10000", **(props or {})})
        s.query("copy")
        producer = Producer(bench.bootstrap, topic, bench.flight_records(), sz.s3_rate)
        producer.start()
        time.sleep(sz.s3_window_s)  # the measured window: records are produced during it
        sent = producer.finish()
        s.wait_idle(timeout_s=600)
        prog = s.progresses("copy")
        lat = sink_latencies(location)
        job = s.catalog.get_job("default", "copy")
        return {"sent": sent, "seen": len(lat), "capacity": busy_rate(prog),
                "p50": percentile(lat, 0.5), "p99": percentile(lat, 0.99), "progress": prog,
                "batches": sum(1 for p in prog if p.get("numInputRows", 0) > 0),
                "checkpoints": len(s.catalog.list_checkpoints(job.uid))}
    finally:
        s.close()


def _label(interval_ms: int) -> str:
    return ("checkpoint every batch" if interval_ms == 0 else
            f"checkpoint {interval_ms} ms" if interval_ms < 1000 else
            f"checkpoint {interval_ms // 1000} s")


def run(bench: Bench) -> ScenarioResult:
    """Scenario 3 (see the module docstring)."""
    sz = bench.sizes
    res = ScenarioResult("s3", "3 latency by checkpoint interval")
    intervals = list(sz.s3_intervals_ms)
    ref = max(intervals)
    variants = [(_label(i), i, None) for i in intervals]
    variants.append((f"event mode, {_label(ref)}", ref, {"streamsql.use.eventmode": "true"}))
    res.details.update(rate_records_per_s=sz.s3_rate, window_s=sz.s3_window_s,
                       intervals_ms=intervals, reference_interval_ms=ref, runs={})
    runs = max(1, min(bench.repeat, sz.s3_repeat))
    res.details["repeats"] = runs
    for i in range(runs):
        caps = {}
        for label, interval, props in variants:
            r = one_interval(bench, interval, i, props)
            caps[label] = r["capacity"]
            res.figure(f"{label}: latency p50", "ms", "lower").add(r["p50"])
            res.figure(f"{label}: latency p99", "ms", "lower").add(r["p99"])
            res.figure(f"{label}: throughput (busy)", "records/s").add(r["capacity"])
            res.figure(f"{label}: checkpoints", "count", "lower").add(r["checkpoints"])
            res.details["runs"].setdefault(label, []).append(
                {k: v for k, v in r.items() if k != "progress"}
                | {"breakdown": progress_breakdown(r["progress"])})
            bench.log(f"  s3 {label}: {r['sent']:,} sent, {r['seen']:,} in sink, "
                      f"{r['batches']} batches, {r['checkpoints']} checkpoints, capacity "
                      f"{r['capacity'] or 0:,.0f}/s, latency p50 {r['p50'] or 0:,.0f} ms "
                      f"p99 {r['p99'] or 0:,.0f} ms")
        for label, _, _ in variants:
            if label != _label(ref) and caps.get(label) and caps.get(_label(ref)):
                res.figure(f"{label}: throughput / {_label(ref)}", "ratio").add(
                    caps[label] / caps[_label(ref)])
    res.targets.append(Target(f"{_label(ref)}: latency p50 <= 1 s (DESIGN §4)",
                              f"{_label(ref)}: latency p50", "<=", 1000))
    return res
