"""One module's world for in-process integration tests: a streamjob home, its catalog,
an executor for StreamSQL statements, and (for tests that drive queries themselves) one
Spark session clone. Modules subclass these for their own helpers."""

from __future__ import annotations

import json
import os
from pathlib import Path

from streamjob.catalog import Catalog
from streamjob.executor import Executor
from streamjob.grammar import parse_script
from streamjob.home import Home

FAST = {"morphling.job.checkpoint.interval": "0"}
"""Job properties of test jobs: every micro-batch a checkpoint (DESIGN §4)."""


class World:
    """A home under ``root`` (local[2] Spark, 2 shuffle partitions), its catalog and an
    executor; ``run`` executes a StreamSQL script and returns each statement's result."""

    def __init__(self, root: Path, manager=None):
        self.root = root
        self.home = Home.open(root / "home", {"spark.master": "local[2]",
                                              "spark.sql.shuffle.partitions": "2"})
        self.catalog = Catalog(self.home.catalog_url)
        self.ex = Executor(self.catalog, self.home, manager)
        self.files = 0

    def run(self, script: str) -> list:
        return [self.ex.execute(stmt) for stmt in parse_script(script)]

    def write(self, directory: Path, records: list[dict]) -> None:
        """Add one JSON-lines file to a file stream's directory, atomically (a file
        stream must never see a half-written file)."""
        self.files += 1
        tmp = self.root / f".part-{self.files}.json"
        tmp.write_text("".join(json.dumps(r) + "\n" for r in records))
        os.rename(tmp, directory / f"part-{self.files:04d}.json")

    def close(self) -> None:
        self.catalog.close()


def close_keeping_spark(session) -> None:
    """``session.close()`` of a :class:`~streamjob.client.session.ClientSession` that
    hosts jobs (``host_jobs=True``), its jobs stopped and its host left as ever, but the
    process's Spark left running for the worker's next test or module (a hosted session's
    close stops Spark, as ``streamjob run`` ends: the next one would start a JVM again,
    about 1 s of a worker on an idle host). Spark's stop alone is skipped, nothing else."""
    from streamjob.spark import session as engine

    stop_spark = engine.stop_spark
    engine.stop_spark = lambda: None  # JobManager.shutdown imports it when it runs
    try:
        session.close()
    finally:
        engine.stop_spark = stop_spark


def start_planned(session, plan, checkpoint_dir: str, sink=None):
    """Start ``plan``'s query in ``session`` as the job manager's attempt does: its table
    sink (``sink``, else one built with the job's name as its marker key) prepared, the
    plan bound to its readers, the query started. Returns the StreamingQuery."""
    from streamjob.connectors.sinks import table_sink
    from streamjob.planner.bind import bind_job
    from streamjob.spark.query import start_query

    if sink is None:
        sink = table_sink(plan.sink, plan.sink_spec, marker=plan.qualified_name,
                          job=plan.qualified_name, exactly_once=plan.guarantee == "exactly-once",
                          upsert=plan.output_mode == "update",
                          checkpointed=plan.props.checkpoint_enabled)
        sink.prepare()
    return start_query(session, bind_job(plan), checkpoint_dir, sink)


class SparkWorld(World):
    """A :class:`World` with one Spark session clone: tests plan jobs and start their
    queries themselves (``plan_job`` + :func:`start_planned`), then ``processAllAvailable()``."""

    def __init__(self, root: Path):
        super().__init__(root)
        from streamjob.spark.session import job_session, spark_session

        self.session = job_session(spark_session(self.home), {"spark.sql.shuffle.partitions": "2"})

    def plan(self, job: str, query: str, props: dict | None = None):
        from streamjob.planner.plan import plan_job

        return plan_job(self.catalog, self.home, "default", job, query, {**FAST, **(props or {})})

    def start(self, job: str, query: str, props: dict | None = None, sink=None):
        """Plan ``job`` and start its query (checkpoints under ``root/checkpoints/job``);
        ``sink`` is its TableSink (None: built and prepared by :func:`start_planned`)."""
        plan = self.plan(job, query, props)
        return plan, start_planned(self.session, plan, str(self.root / "checkpoints" / job), sink)

    def close(self) -> None:
        for q in self.session.streams.active:
            q.stop()
        super().close()
