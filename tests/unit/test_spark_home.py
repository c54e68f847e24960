import pytest
"""The Spark home mirror whose Python workers import the installed pyspark
(streamjob/spark/home.py)."""

import os
import sys
from pathlib import Path

import pyspark

from streamjob.spark.home import worker_spark_home

pytestmark = pytest.mark.unit

PYSPARK = Path(pyspark.__file__).resolve().parent


def test_mirror_links_the_installation_without_the_zips(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    home = Path(worker_spark_home({}))
    assert home.parent == tmp_path / "streamjob"
    assert (home / "bin" / "spark-submit").exists() and (home / "jars").is_dir()
    assert os.readlink(home / "jars") == str(PYSPARK / "jars")
    assert not (home / "python").exists()  # no pyspark.zip / py4j zip on the workers' path
    # the same installation gets the same mirror
    assert worker_spark_home({"PYSPARK_PYTHON": sys.executable}) == str(home)


def test_stale_links_are_repaired(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    home = Path(worker_spark_home({}))
    (home / "jars").unlink()
    (home / "jars").symlink_to(tmp_path)  # e.g. left by an older installation
    (home / "bin").unlink()  # or missing
    assert worker_spark_home({}) == str(home)
    assert os.readlink(home / "jars") == str(PYSPARK / "jars")
    assert (home / "bin" / "spark-submit").exists()


def test_left_alone_when_the_user_chose_or_workers_run_another_python(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert worker_spark_home({"SPARK_HOME": "/opt/spark"}) is None
    assert worker_spark_home({"PYSPARK_PYTHON": "/usr/bin/python3.9-other"}) is None
    assert worker_spark_home({"PYSPARK_DRIVER_PYTHON": "/usr/bin/python3.9-other"}) is None
    assert not (tmp_path / "streamjob").exists()


def test_unwritable_cache_falls_back_to_sparks_own_home(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    assert worker_spark_home({}) is None
