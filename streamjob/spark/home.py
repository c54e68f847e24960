"""A Spark home whose Python workers import the installed, byte-compiled pyspark.

Spark starts every Python process of a query (the streaming source runner, the data
source planners, the worker daemon) with ``PYTHONPATH`` beginning with
``$SPARK_HOME/python/lib/pyspark.zip`` and the py4j zip (Spark's
``PythonUtils.sparkPythonPath``, read from the driver JVM's environment). The pip
package of pyspark ships that zip without byte code, and zipimport cannot cache any, so
each of those processes compiles every pyspark module it imports: 0.5-0.6 s per process
on this project's 2-core machines (``python -c 'import pyspark.worker'``: 0.85 s from the
zip, 0.25 s installed), several seconds of every job start and recovery
(docs/results/2026-11-21.md, "Cold starts and many jobs").

When the workers run this very interpreter (``PYSPARK_PYTHON`` and
``PYSPARK_DRIVER_PYTHON`` unset or naming ``sys.executable``), they can import the
pyspark this process imports, the same files the JVM came with. :func:`worker_spark_home`
then returns a directory that mirrors the pyspark package (symbolic links to its
``bin``, ``jars``, ...) without ``python/lib``, and the driver JVM is started with it as
``SPARK_HOME``: the zips are absent from the workers' path, and Python finds the
installed pyspark and py4j with their ``__pycache__``.

It only concerns Python processes the driver's JVM starts (every one on a ``local``
master; the driver-side runners on a cluster, whose executors use their own
``SPARK_HOME``). A ``SPARK_HOME`` set by the user is never replaced.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
from pathlib import Path

log = logging.getLogger(__name__)

#: Entries of the pyspark package that a Spark home needs (scripts, jars, data); the
#: ``python`` folder (the zips) is left out on purpose.
_LINKED = ("bin", "jars", "sbin", "conf", "data", "licenses", "examples", "kubernetes",
           "yarn", "RELEASE")


def _same_interpreter(value: str | None) -> bool:
    if not value:
        return True
    try:
        return os.path.realpath(value) == os.path.realpath(sys.executable)
    except OSError:
        return False


def cache_dir() -> Path:
    """streamjob's per-user cache: ``$XDG_CACHE_HOME/streamjob`` (``~/.cache/streamjob``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "streamjob"


def worker_spark_home(env: dict[str, str] | None = None) -> str | None:
    """The ``SPARK_HOME`` to start the driver JVM with, or None to leave Spark's own.

    None when the user set ``SPARK_HOME``, when the workers run another interpreter
    (``PYSPARK_PYTHON``/``PYSPARK_DRIVER_PYTHON``), when pyspark is not a pip-style
    package with its ``jars`` inside, or when the mirror cannot be written; the JVM then
    starts as pyspark would start it. The mirror lives in :func:`cache_dir`, one per
    pyspark installation, and is (re)built when missing or stale: each link must point
    into the installation this process imports. Raises nothing.
    """
    env = os.environ if env is None else env
    if env.get("SPARK_HOME"):
        return None
    if not (_same_interpreter(env.get("PYSPARK_PYTHON"))
            and _same_interpreter(env.get("PYSPARK_DRIVER_PYTHON"))):
        return None
    try:
        import pyspark

        pkg = Path(pyspark.__file__).resolve().parent
        if not (pkg / "jars").is_dir() or not (pkg / "bin" / "spark-submit").exists():
            return None
        key = hashlib.sha1(str(pkg).encode()).hexdigest()[:10]
        home = cache_dir() / f"spark-home-{pyspark.__version__}-{key}"
        return str(_mirror(pkg, home))
    except Exception as exc:  # noqa: BLE001 - an optimisation: never fail a start for it
        log.debug("using Spark's own SPARK_HOME: %s", exc)
        return None


def _mirror(pkg: Path, home: Path) -> Path:
    """Create (or repair) ``home`` as links to ``pkg``'s Spark-home entries. Safe when
    several processes do it at once: each link is made under a temporary name and
    renamed into place (atomic on POSIX)."""
    home.mkdir(parents=True, exist_ok=True)
    for name in _LINKED:
        target = pkg / name
        link = home / name
        if not target.exists():
            continue
        if link.is_symlink() and os.readlink(link) == str(target):
            continue
        tmp = home / f".{name}.{os.getpid()}"
        if tmp.is_symlink() or tmp.exists():
            tmp.unlink()
        tmp.symlink_to(target)
        os.replace(tmp, link)
    return home
