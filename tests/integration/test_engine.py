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
