"""A class-data sharing archive of Spark's driver JVM: the JVM starts in about half the time.

Most of a cold SparkSession start is the JVM loading, parsing and verifying some 15,000
classes from Spark's jars. With dynamic class-data sharing (JEP 350, JDK 13+) a JVM
started with ``-XX:ArchiveClassesAtExit=F`` writes the classes it loaded into F when it
exits, and a later JVM started with ``-XX:SharedArchiveFile=F`` maps them instead.
Measured on this project's 2-core hosts (``SparkSession`` start plus a first small query,
each in a fresh process): 8.5-8.8 s without the archive, 5.0-5.2 s with it. Every
``streamjob run``, server, shell and ``check`` start gains this, as do the tests that
start ``streamjob`` processes.

The archive lives in streamjob's per-user cache (:func:`~streamjob.spark.home.cache_dir`),
one per JVM, pyspark installation and driver class path (:func:`archive_path`), since a
JVM only accepts an archive made with the same JVM and a matching class path. It
is made by the first driver JVM that finds none: that JVM writes it under a temporary
name that carries its process id, and when this process stops Spark
(:func:`~streamjob.spark.session.stop_spark`), :func:`finish_archive` waits for the JVM
to exit and renames the file into place only if the JVM exited cleanly. So a
half-written archive is never used. A JVM killed while writing leaves a temporary file
that the next start deletes (its writer is gone). While one process is writing the
archive, others start without one and write none.

Nothing here can fail a start. The options use ``-Xshare:auto``, so a JVM that cannot
use the archive (another JDK build, a changed class path) starts as if it had none.
``-Xlog:cds*=off`` keeps the JVM's notes about classes it cannot archive (several
hundred lines) off the user's terminal; with ``--debug`` the JVM says instead which
archive it opened or why it could not use it (``-Xlog:cds=info``). A user's own ``-XX:SharedArchiveFile`` or
``-Xshare`` option is left alone, and ``STREAMJOB_CDS=0`` turns the archive off.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
from pathlib import Path

from ..process import pid_alive
from .home import cache_dir

log = logging.getLogger(__name__)

#: Turn the archive off with ``STREAMJOB_CDS=0`` (e.g. to compare start times).
ENV = "STREAMJOB_CDS"
#: Options that keep the JVM quiet about classes it cannot archive (signed jars, old
#: class file versions): several hundred warning lines at exit otherwise.
QUIET = "-Xlog:cds*=off"
#: With --debug: the archives the JVM opens, or why it cannot use one.
VERBOSE = "-Xlog:cds=info"
#: Class-path settings of the driver: an archive is only valid for the class path it was
#: made with, so they are part of its name.
CLASSPATH_CONF = ("spark.driver.extraClassPath", "spark.jars", "spark.jars.packages")


def _java() -> str | None:
    """The ``java`` that spark-submit starts (``JAVA_HOME`` first, as Spark's launcher)."""
    home = os.environ.get("JAVA_HOME")
    if home and os.path.exists(os.path.join(home, "bin", "java")):
        return os.path.realpath(os.path.join(home, "bin", "java"))
    found = shutil.which("java")
    return os.path.realpath(found) if found else None


def archive_path(conf: dict[str, str], spark_home: str | None) -> Path | None:
    """Where the archive for this JVM, Spark installation and driver class path lives:
    ``<cache>/cds-<pyspark version>-<digest>.jsa``; None when no ``java`` is found."""
    import pyspark

    java = _java()
    if java is None:
        return None
    digest = hashlib.sha1()
    for part in (java, str(os.path.getmtime(java)), os.path.dirname(pyspark.__file__),
                 spark_home or "", *(conf.get(k, "") for k in CLASSPATH_CONF)):
        digest.update(part.encode() + b"\0")
    return cache_dir() / f"cds-{pyspark.__version__}-{digest.hexdigest()[:12]}.jsa"


def _writers(final: Path) -> list[tuple[Path, int]]:
    """Temporary archives being (or left) written for ``final``, with their writer's pid."""
    out = []
    for tmp in final.parent.glob(final.name + ".*.tmp"):
        pid = tmp.name[len(final.name) + 1:-len(".tmp")]
        if pid.isdigit():
            out.append((tmp, int(pid)))
    return out


def java_options(conf: dict[str, str], spark_home: str | None,
                 debug: bool = False) -> tuple[str, Path | None]:
    """The driver JVM options for class-data sharing, and the temporary archive this JVM
    will write (None when it uses an archive or none at all). ``debug``: the JVM logs
    its use of the archive instead of keeping quiet.

    Returns ``("", None)`` when turned off (``STREAMJOB_CDS=0``), when the user's
    ``spark.driver.extraJavaOptions`` already choose (``-Xshare``,
    ``SharedArchiveFile``, ``ArchiveClassesAtExit``), or on any error. Raises nothing.
    """
    if os.environ.get(ENV, "1") == "0":
        return "", None
    user = conf.get("spark.driver.extraJavaOptions", "")
    if any(flag in user for flag in ("-Xshare", "SharedArchiveFile", "ArchiveClassesAtExit")):
        return "", None
    logging_option = VERBOSE if debug else QUIET
    try:
        final = archive_path(conf, spark_home)
        if final is None:
            return "", None
        if final.is_file():
            return f"-XX:SharedArchiveFile={final} -Xshare:auto {logging_option}", None
        writing = False
        for tmp, pid in _writers(final):
            if pid != os.getpid() and pid_alive(pid):
                writing = True
            else:  # its writer died before the archive was complete
                tmp.unlink(missing_ok=True)
        if writing:
            return "", None
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = final.with_name(f"{final.name}.{os.getpid()}.tmp")
        tmp.touch()  # claims the writing now: the JVM only writes the file at its exit
        return f"-XX:ArchiveClassesAtExit={tmp} {logging_option}", tmp
    except Exception as exc:  # noqa: BLE001 - an optimisation: never fail a start for it
        log.debug("no class-data sharing archive: %s", exc)
        return "", None


def finish_archive(proc: subprocess.Popen | None, tmp: Path | None,
                   timeout_s: float = 120.0) -> Path | None:
    """After Spark stopped: let the driver JVM ``proc`` exit (its stdin closed, as
    pyspark's gateway expects when Python exits), wait up to ``timeout_s`` s while it
    writes ``tmp``, and rename ``tmp`` to its final name if the JVM exited with 0.
    Returns the final path, or None (the temporary file is then removed). Raises nothing.
    """
    if proc is None or tmp is None:
        return None
    final = tmp.with_name(tmp.name.rsplit(".", 2)[0])
    try:
        if proc.stdin is not None and not proc.stdin.closed:
            proc.stdin.close()
        code = proc.wait(timeout_s)
        if code == 0 and tmp.is_file() and tmp.stat().st_size > 0:
            os.replace(tmp, final)
            log.debug("class-data sharing archive written: %s", final)
            return final
        log.debug("no class-data sharing archive: the JVM exited with %s", code)
    except Exception as exc:  # noqa: BLE001 - an optimisation: never fail a stop for it
        log.debug("no class-data sharing archive: %s", exc)
    try:
        tmp.unlink(missing_ok=True)
    except OSError:
        pass
    return None

