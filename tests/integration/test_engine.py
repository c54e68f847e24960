"""The process's Spark engine (streamjob/spark/session.py) against real local Spark."""

import os

import pyspark
import pytest

from streamjob.spark.session import spark_session
from streamjob.home import Home

pytestmark = pytest.mark.spark


@pytest.mark.skipif(bool(os.environ.get("SPARK_HOME")), reason="the user's SPARK_HOME is kept")
def test_python_workers_import_the_installed_pyspark(tmp_path):
    """Spark's Python workers import the installed, byte-compiled pyspark, not the
    pyspark.zip that Spark puts first on their path (streamjob/spark/home.py)."""
    spark = spark_session(Home.open(tmp_path / "home", {"spark.master": "local[2]"}))
    files = (spark.sparkContext.parallelize([0, 1], 2)
             .map(lambda _: (__import__("pyspark").__file__, __import__("sys").path)).collect())
    for file, path in files:
        assert file == pyspark.__file__, file
        zips = [p for p in path if p.endswith(".zip") and "pyspark" in p]
        assert zips and not any(os.path.exists(p) for p in zips), zips  # named, absent
    assert "SPARK_HOME" not in os.environ  # set for the JVM only


def test_warm_up_runs_one_throwaway_batch_in_python_workers(tmp_path):
    """A standby's warm-up (streamjob/spark/warmup.py, issue 19): one micro-batch of the
    Python streaming source, its rows read in Spark's Python workers (not this process),
    the scratch checkpoint directory and the result view gone afterwards; the workers
    are kept for the next query (a second warm-up reads in the same ones)."""
    from streamjob.spark.warmup import WARMUP_ROWS, warm_up

    spark = spark_session(Home.open(tmp_path / "home", {"spark.master": "local[2]"}))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    first = warm_up(spark, str(scratch))
    assert (first.rows, first.batches) == (WARMUP_ROWS, 1), first
    assert first.worker_pids and os.getpid() not in first.worker_pids, first
    assert list(scratch.iterdir()) == []  # the throwaway checkpoint is discarded
    assert not [q for q in spark.streams.active if (q.name or "").startswith("streamjob_warmup")]
    # the second reads in workers that lived before it: none forked for it. (Not
    # necessarily the first's: Spark's idle-worker queue is shared with every query the
    # session ran before, e.g. another test's pandas UDFs.)
    alive = {int(p) for p in os.listdir("/proc") if p.isdigit()}
    second = warm_up(spark, str(scratch), rows=10)
    assert second.rows == 10 and set(second.worker_pids) <= alive, (second, first)


def test_a_job_session_registers_only_the_sources_its_job_reads(tmp_path):
    """job_session(sources=...) registers just the named Python data sources (issue 19:
    a cold start registers what the job reads); None registers all three."""
    from streamjob.spark.session import job_session

    spark = spark_session(Home.open(tmp_path / "home", {"spark.master": "local[2]"}))

    def registered(session) -> set[str]:
        names = {"streamjob_kafka", "streamjob_sql", "streamjob_files"}
        jmgr = session._jsparkSession.sessionState().dataSourceManager()  # noqa: SLF001
        return {n for n in names if jmgr.dataSourceExists(n)}

    assert registered(job_session(spark, {}, {"streamjob_kafka"})) == {"streamjob_kafka"}
    assert registered(job_session(spark, {}, set())) == set()
    assert registered(job_session(spark, {}, None)) == {"streamjob_kafka", "streamjob_sql",
                                                        "streamjob_files"}
