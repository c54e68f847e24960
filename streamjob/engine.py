"""The one SparkSession a streamjob process hosts, and per-job session clones.

pyspark is imported here and nowhere near the CLI's start-up path, so ``streamjob --help``
and catalog-only commands stay instant.
"""

from __future__ import annotations

import os
import sys
import threading
from importlib import resources

from .home import Home

_lock = threading.Lock()
_spark = None


def spark_session(home: Home, debug: bool = False):
    """The process's SparkSession, created on first use from the home's ``spark.*`` conf.

    Python workers run this interpreter (so they see streamjob and its dependencies);
    Spark's own logging is kept to errors unless ``debug``.
    """
    global _spark
    with _lock:
        if _spark is not None:
            return _spark
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        from pyspark.sql import SparkSession

        conf = dict(home.spark_conf)
        builder = SparkSession.builder.appName("streamjob")
        conf.setdefault("spark.driver.host", "127.0.0.1")
        conf.setdefault("spark.driver.bindAddress", "127.0.0.1")
        conf.setdefault("spark.sql.session.timeZone", "UTC")
        conf.setdefault("spark.sql.streaming.stopTimeout", "30s")
        conf.setdefault("spark.ui.showConsoleProgress", "false")
        if not debug:
            log4j = resources.files("streamjob.resources").joinpath("log4j2.properties")
            conf.setdefault("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log4j}")
        for k, v in conf.items():
            builder = builder.config(k, v)
        _spark = builder.getOrCreate()
        _spark.sparkContext.setLogLevel("DEBUG" if debug else "ERROR")
        return _spark


def job_session(root, sql_conf: dict[str, str]):
    """A session clone for one job: own temp views and SQL conf, shared SparkContext.

    The Python data sources are registered per clone (Spark keeps them per session):
    ``streamjob_kafka`` (Kafka streams), ``streamjob_sql`` and ``streamjob_files`` (static
    tables read at each micro-batch, :mod:`streamjob.connectors.static`).
    """
    from .connectors.kafka_source import KafkaDataSource
    from .connectors.static import FileStaticDataSource, SqlStaticDataSource

    session = root.newSession()
    for source in (KafkaDataSource, SqlStaticDataSource, FileStaticDataSource):
        session.dataSource.register(source)
    for k, v in sql_conf.items():
        session.conf.set(k, v)
    return session


def stop_spark() -> None:
    """Stop the process's SparkSession if one was started."""
    global _spark
    with _lock:
        if _spark is not None:
            _spark.stop()
            _spark = None
