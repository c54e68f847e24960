"""Running jobs for the benchmark: a streamjob job driven as a user does (StreamSQL
statements through an executor with an in-process :class:`~streamjob.manager.JobManager`,
the same code ``streamjob run`` runs), and the hand-written PySpark anchor job (the same
Kafka source class, ``spark.readStream`` / ``writeStream`` Parquet, no catalog, no manager).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .harness import FLIGHT_COLUMNS, Bench, progresses_of, wait_until

COLUMN_NAMES = [c.split()[0] for c in FLIGHT_COLUMNS.split(", ")]


def stream_sql(name: str, topic: str, bootstrap: str, columns: str = FLIGHT_COLUMNS,
               reset: str = "earliest") -> str:
    """CREATE STREAM of a Kafka topic of JSON flights."""
    return (f'CREATE STREAM {name} ({columns}) TBLPROPERTIES("topic"="{topic}", '
            f'"kafka.broker.list"="{bootstrap}", "format"="json", '
            f'"transwarp.consumer.reset.offset.strategy"="{reset}");')


def job_props(interval_ms: int, batch: int, **extra: str) -> str:
    """JOBPROPERTIES(...) text: checkpoint interval (ms) and records per batch (0 = no cap)."""
    props = {"morphling.job.checkpoint.interval": str(interval_ms),
             "morphling.job.max.records.per.batch": str(batch), **extra}
    return "JOBPROPERTIES(" + ", ".join(f'"{k}"="{v}"' for k, v in props.items()) + ")"


@dataclass
class StreamjobSession:
    """A fresh streamjob home with its catalog, an in-process job manager and an
    executor: what ``streamjob run`` builds. ``run`` executes StreamSQL text."""

    bench: Bench
    name: str | None = None
    catalog_url: str | None = None
    home: Any = None
    catalog: Any = None
    manager: Any = None
    ex: Any = None

    def __post_init__(self) -> None:
        from streamjob.catalog import Catalog
        from streamjob.executor import Executor
        from streamjob.manager import JobManager

        self.home = self.bench.home(self.name)
        self.bench.spark()  # one SparkSession per bench process, as in a server
        self.catalog = Catalog(self.catalog_url or self.home.catalog_url)
        self.manager = JobManager(self.catalog, self.home)
        self.ex = Executor(self.catalog, self.home, self.manager)

    def run(self, script: str) -> list:
        """Execute StreamSQL ``script``; START statements start jobs in this process."""
        from streamjob.grammar import parse_script

        return [self.ex.execute(stmt) for stmt in parse_script(script)]

    def runner(self, job: str):
        """The JobRunner of ``job`` (database default)."""
        info = self.catalog.get_job("default", job)
        return self.manager.runners[info.uid]

    def query(self, job: str, timeout_s: float = 120):
        """The running StreamingQuery of ``job`` (waits until it exists)."""
        r = self.runner(job)
        return wait_until(lambda: r.query, timeout_s, f"the query of job {job}")

    def wait_idle(self, timeout_s: float = 1800) -> None:
        """Until every job has committed all input available now (``run --until-idle``)."""
        self.manager.wait_until_idle(poll_s=0.05, timeout=timeout_s)

    def progresses(self, job: str) -> list[dict]:
        return progresses_of(self.query(job))

    def close(self) -> None:
        self.manager.stop_all(graceful=False, timeout=120)
        self.catalog.close()


def parquet_job(s: StreamjobSession, topic: str, interval_ms: int, batch: int,
                columns: str = FLIGHT_COLUMNS, job: str = "copy", reset: str = "earliest",
                start: bool = True, props: dict[str, str] | None = None,
                stored_as: str = "PARQUET") -> Path:
    """Declare stream ``src_<job>``, table ``out_<job>`` (``STORED AS stored_as``:
    Parquet, or DELTA for a Delta table) and job ``job`` (a plain projection of every
    column, with further job ``props``); START it if ``start``. Returns the table's
    directory."""
    names = ", ".join(c.split()[0] for c in columns.split(", "))
    location = s.home.root / "warehouse" / "default" / f"out_{job}"
    s.run(stream_sql(f"src_{job}", topic, s.bench.bootstrap, columns, reset)
          + f"CREATE TABLE out_{job} ({columns}) STORED AS {stored_as} LOCATION '{location}';"
          + f'CREATE STREAMJOB {job} AS ("insert into out_{job} select {names} from src_{job}") '
          + job_props(interval_ms, batch, **(props or {})) + ";")
    if start:
        s.run(f"START STREAMJOB {job};")
    return location


def handwritten_job(bench: Bench, topic: str, batch: int, out: Path,
                    interval_ms: int = 0, source: str | None = None,
                    options: dict[str, str] | None = None):
    """Start the hand-written anchor: ``spark.readStream`` of the streamjob Kafka source
    class (registered directly), every column written to Parquet under ``out`` with
    Spark's checkpoint beside it; no catalog, no manager. Returns the StreamingQuery.

    ``source``: the data source class to register (default the current
    :class:`~streamjob.connectors.kafka.source.KafkaDataSource`); ``options``: more
    options of the source (e.g. ``recordParser``)."""
    from streamjob.connectors.kafka.source import KafkaDataSource

    src = source or KafkaDataSource
    session = bench.spark().newSession()
    session.dataSource.register(src)
    df = (session.readStream.format(src.name()).schema(FLIGHT_COLUMNS)
          .option("topic", topic).option("bootstrap", bench.bootstrap)
          .option("format", "json").option("startingOffsets", "earliest")
          .option("maxRecordsPerBatch", str(batch)).options(**(options or {})).load())
    return (df.select(*COLUMN_NAMES).writeStream.format("parquet")
            .option("path", str(out)).option("checkpointLocation", str(out) + ".checkpoint")
            .trigger(processingTime=f"{interval_ms} milliseconds").start())


def committed_rows(query) -> int:
    """Records committed by ``query``: the sum of its last progress's end offsets minus
    its first progress's start offsets (0 before a batch completed)."""
    prog = query.recentProgress
    if not prog:
        return 0
    total = 0
    for src in prog[-1].sources:
        end = src.endOffset
        if isinstance(end, str):
            import json

            end = json.loads(end)
        for parts in (end or {}).values():
            total += sum(int(v) for v in parts.values())
    return total


def raw_consumer(bootstrap: str, topic: str, expected: int) -> float:
    """Seconds one kafka-python consumer (``assign``, the source's consumer settings
    and CRC choice, no Spark, values not decoded) takes to read ``expected`` records of
    ``topic``."""
    from kafka import KafkaConsumer, TopicPartition

    from streamjob.connectors.kafka.source import READ_CONSUMER_SETTINGS, native_crc32c

    t0 = time.monotonic()
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                      max_poll_records=50_000, check_crcs=native_crc32c(),
                      **READ_CONSUMER_SETTINGS)
    try:
        tps = [TopicPartition(topic, p) for p in sorted(c.partitions_for_topic(topic))]
        c.assign(tps)
        c.seek_to_beginning(*tps)
        n = 0
        while n < expected:
            for recs in c.poll(timeout_ms=500).values():
                n += len(recs)
        return time.monotonic() - t0
    finally:
        c.close()


def confluent_consumer(bootstrap: str, topic: str, expected: int) -> float | None:
    """Seconds one confluent-kafka (librdkafka) consumer takes to read ``expected``
    records of ``topic`` from the beginning (``assign``, no group commits, fetch sizes
    as the source's :data:`READ_CONSUMER_SETTINGS`, CRCs checked as the source does, no
    Spark, values not decoded); None when ``confluent_kafka`` is not installed (the
    ``bench`` extra)."""
    try:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
    except ImportError:
        return None
    from streamjob.connectors.kafka.source import READ_CONSUMER_SETTINGS, native_crc32c

    s = READ_CONSUMER_SETTINGS
    t0 = time.monotonic()
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "streamjob-bench",
                  "enable.auto.commit": False, "fetch.max.bytes": s["fetch_max_bytes"],
                  "max.partition.fetch.bytes": s["max_partition_fetch_bytes"],
                  "fetch.min.bytes": s["fetch_min_bytes"],
                  "fetch.wait.max.ms": s["fetch_max_wait_ms"],
                  "receive.message.max.bytes": s["fetch_max_bytes"] + (1 << 20),
                  "socket.receive.buffer.bytes": s["receive_buffer_bytes"],
                  "check.crcs": native_crc32c()})
    try:
        parts = c.list_topics(topic, timeout=30).topics[topic].partitions
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in sorted(parts)])
        n = 0
        while n < expected:
            n += sum(1 for m in c.consume(num_messages=50_000, timeout=0.5) if m.error() is None)
        return time.monotonic() - t0
    finally:
        c.close()
