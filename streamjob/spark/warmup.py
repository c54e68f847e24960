"""A throwaway micro-batch that warms a standby job manager (issue 19, DESIGN §8).

A standby ``streamjob server`` starts Spark at once; with :func:`warm_up` it also runs
one small streaming query through the path a Kafka job takes, so that a takeover finds
it warm:

* the query reads the Python data source ``streamjob_warmup`` (:class:`WarmUpDataSource`),
  a Python ``DataSourceStreamReader`` like the Kafka source's: Spark asks its streaming
  source runner (a Python process) for offsets and partitions and runs ``read`` in its
  Python workers, which yield Arrow record batches as the Kafka source does. Its module
  imports the Kafka source's modules (kafka-python, pyarrow, the decoders), so the
  runner and the workers have them loaded and compiled;
* one micro-batch of :data:`WARMUP_ROWS` rows over two partitions (both cores of a
  ``local[2]`` master get a worker) goes to Spark's memory sink with a scratch
  checkpoint directory, deleted afterwards; the session clone is dropped.

Spark's own classes (micro-batch execution, the Python runners, the Arrow path) are then
loaded and partly compiled by the JIT in the driver JVM, and the worker daemon keeps its
idle workers (``spark.python.worker.reuse``, on by default). What stays cold: the job's
own plan, its Kafka consumer connections, its sink.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import uuid
from dataclasses import dataclass
from typing import Iterator

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

# the Kafka source's modules: imported by the runner and the workers that unpickle the
# reader below, as they are for a Kafka job
from streamjob.connectors.kafka import source as _kafka_source  # noqa: F401

#: The data source's name (``spark.readStream.format(WARMUP_SOURCE)``).
WARMUP_SOURCE = "streamjob_warmup"
#: Rows of the throwaway batch.
WARMUP_ROWS = 64
#: Partitions of the throwaway batch (one Python worker each, up to the master's cores).
WARMUP_PARTITIONS = 2


@dataclass(frozen=True)
class WarmUp:
    """What the throwaway batch did: ``rows`` read (== :data:`WARMUP_ROWS` when it ran),
    the process ids of the Python workers that read them (never the driver's),
    ``batches`` the micro-batches the query ran, ``seconds`` its wall time."""

    rows: int
    worker_pids: tuple[int, ...]
    batches: int
    seconds: float


class _Part(InputPartition):
    def __init__(self, index: int, rows: int) -> None:
        self.index, self.rows = index, rows


class WarmUpReader(DataSourceStreamReader):
    """Offsets ``{"n": 0}`` -> ``{"n": rows}``: one batch, then nothing new."""

    def __init__(self, rows: int) -> None:
        self.rows = rows

    def initialOffset(self) -> dict:
        return {"n": 0}

    def latestOffset(self, start: dict, limit) -> dict:
        return {"n": self.rows}

    def partitions(self, start: dict, end: dict) -> list:
        n = end["n"] - start["n"]
        return [_Part(i, n // WARMUP_PARTITIONS + (i < n % WARMUP_PARTITIONS))
                for i in range(WARMUP_PARTITIONS) if n > 0]

    def commit(self, end: dict) -> None:
        """Nothing to release."""

    def read(self, partition: _Part) -> Iterator:
        import pyarrow as pa

        pid = os.getpid()
        yield pa.RecordBatch.from_pydict(
            {"part": pa.array([partition.index] * partition.rows, pa.int32()),
             "pid": pa.array([pid] * partition.rows, pa.int32())})


class WarmUpDataSource(DataSource):
    """``spark.readStream.format("streamjob_warmup")``: :class:`WarmUpReader`
    (option ``rows``, default :data:`WARMUP_ROWS`)."""

    @classmethod
    def name(cls) -> str:
        return WARMUP_SOURCE

    def schema(self) -> str:
        return "part INT, pid INT"

    def streamReader(self, schema) -> WarmUpReader:
        return WarmUpReader(int(self.options.get("rows", WARMUP_ROWS)))


def warm_up(spark, scratch_root: str | None = None, rows: int = WARMUP_ROWS) -> WarmUp:
    """Run the throwaway micro-batch (module docstring) in a clone of ``spark`` and
    return what it did. ``scratch_root``: where its checkpoint directory is made (a
    temporary directory by default); the directory is removed afterwards, whatever
    happens. Raises whatever Spark raises (the caller logs it: a standby that could not
    warm up is still a standby)."""
    t0 = time.monotonic()
    session = spark.newSession()
    session.dataSource.register(WarmUpDataSource)
    name = f"streamjob_warmup_{uuid.uuid4().hex[:8]}"
    ckdir = tempfile.mkdtemp(prefix="sj-warmup-", dir=scratch_root)
    query = None
    try:
        query = (session.readStream.format(WARMUP_SOURCE).option("rows", str(rows)).load()
                 .writeStream.format("memory").queryName(name)
                 .option("checkpointLocation", ckdir).start())
        query.processAllAvailable()
        batches = len([p for p in query.recentProgress if p.numInputRows > 0])
        from pyspark.sql import functions as F

        got = session.table(name).agg(F.count(F.lit(1)).alias("n"),
                                      F.collect_set("pid").alias("pids")).first()
        return WarmUp(rows=int(got["n"]), worker_pids=tuple(sorted(got["pids"])),
                      batches=batches, seconds=time.monotonic() - t0)
    finally:
        if query is not None:
            query.stop()
        session.catalog.dropTempView(name)
        shutil.rmtree(ckdir, ignore_errors=True)
