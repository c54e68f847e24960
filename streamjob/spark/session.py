"""The one SparkSession a streamjob process hosts, and per-job session clones.

pyspark is imported here and nowhere near the CLI's start-up path, so ``streamjob --help``
and catalog-only commands stay instant.

On a cluster (``spark.master`` other than ``local``/``local[...]``, e.g.
``spark://host:7077``) the executors run our Python data sources (the Kafka source's
``read``, the static tables' readers), which Spark pickles by reference to the module
``streamjob.connectors...``. The executors need not have streamjob installed: the driver
zips its own installed package once per process (:func:`package_zip`) and hands it to
``SparkContext.addPyFile`` (:func:`ship_package`), so every Python worker of the
application imports streamjob from that zip. The executors' Python must still have
streamjob's third-party dependencies (pyarrow, kafka-python, sqlalchemy, ...), as with
any PySpark job; it is the interpreter named by ``PYSPARK_PYTHON`` on the driver (this
interpreter unless set).
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import sys
import tempfile
import threading
import zipfile
from importlib import resources
from pathlib import Path

from ..home import Home
from ..phases import mark
from .cds import archive_path, finish_archive, java_options
from .home import worker_spark_home

_lock = threading.Lock()
_spark = None
_zip_lock = threading.Lock()
_zip: str | None = None  # this process's zip of the streamjob package (package_zip)
_archive: Path | None = None  # the class-data sharing archive our driver JVM writes at exit

#: Names left out of the shipped package: byte-code caches and editor/OS litter.
_SKIP_DIRS = {"__pycache__"}
_SKIP_SUFFIXES = (".pyc", ".pyo")
#: Where Spark's Python streaming-source runner looks for Python includes (see ship_package).
_STREAMING_RUNNER_DIR = "streaming_job"


#: SQL settings no job, SET or streamjob.conf may change (DESIGN §9): Spark substitutes
#: ``${env:X}``, ``${system:x}`` and ``${spark.x}`` in SQL text by default, which handed a
#: job's sink the job manager's environment secrets.
SAFE_SQL_CONF = {"spark.sql.variable.substitute": "false"}


def is_local_master(master: str) -> bool:
    """True for masters whose executors live in the driver's JVM (``local``,
    ``local[N]``, ``local[*]``, ``local[N,F]``): they import streamjob as the driver does.
    Anything else (``spark://``, ``yarn``, ``k8s://``, ``local-cluster[...]``) has separate
    executor processes, which get the package shipped."""
    master = (master or "").strip()
    return master == "local" or master.startswith("local[")


def _package_files(pkg_dir: Path) -> list[Path]:
    """The files of the package: modules and package data, no caches, sorted."""
    files = []
    for dirpath, dirnames, filenames in os.walk(pkg_dir):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            if name.endswith(_SKIP_SUFFIXES) or name.startswith("."):
                continue
            files.append(Path(dirpath) / name)
    return files


def package_zip() -> str:
    """A zip of the installed ``streamjob`` package (the directory of its
    ``__init__.py``: every module and the package data, such as ``grammar/*.lark`` and
    ``resources/*``), built once per process in a temporary directory removed at exit.

    Its name carries the version and a digest of the contents
    (``streamjob-<version>-<digest>.zip``), so executors never mistake one build for
    another. Returns the zip's path.
    """
    global _zip
    with _zip_lock:
        if _zip is not None and os.path.exists(_zip):
            return _zip
        import streamjob

        pkg_dir = Path(streamjob.__file__).resolve().parent
        files = _package_files(pkg_dir)
        digest = hashlib.sha256()
        for f in files:
            digest.update(f.relative_to(pkg_dir.parent).as_posix().encode() + b"\0")
            digest.update(f.read_bytes())
        tmp = tempfile.mkdtemp(prefix="streamjob-pyfiles-")
        atexit.register(shutil.rmtree, tmp, True)
        path = os.path.join(tmp, f"streamjob-{streamjob.__version__}-{digest.hexdigest()[:12]}.zip")
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
            for f in files:
                zf.write(f, f.relative_to(pkg_dir.parent).as_posix())
        _zip = path
        return path


def ship_package(sc) -> str | None:
    """Make the executors of SparkContext ``sc`` import streamjob from :func:`package_zip`
    (``sc.addPyFile``) unless its master is local; returns the zip's path, or None when
    nothing was shipped.

    Must run before the Python data sources are registered (:func:`job_session`):
    pyspark captures the context's Python includes when it wraps a data source.
    """
    if is_local_master(sc.master):
        return None
    path = package_zip()
    name = os.path.basename(path)
    if name not in (sc._python_includes or []):
        sc.addPyFile(path)
    # Spark 4.x runs a Python streaming source's driver side (initialOffset, latestOffset,
    # partitions) in a runner process whose Python includes it resolves under the
    # artifact directory "streaming_job" of the driver's SparkFiles root, not the root
    # where addPyFile put them (PythonStreamingSourceRunner passes a fixed job artifact
    # UUID). Without a copy there, a PYSPARK_PYTHON without streamjob installed fails to
    # unpickle our Kafka source on the driver.
    root = sc._jvm.org.apache.spark.SparkFiles.getRootDirectory()
    target = os.path.join(root, _STREAMING_RUNNER_DIR, name)
    if not os.path.exists(target):
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(path, target)
    return path


#: Where the Spark driver JVM writes, under the home (unless --debug): its stdout and
#: stderr, so Spark's log4j lines, the JVM's own messages and the output of pyspark's
#: Python workers (which Spark copies to the JVM's stderr). Appended to; kept to about
#: :data:`LOG_MAX_BYTES` by moving it to ``spark.log.1`` when a JVM starts.
SPARK_LOG = Path("logs") / "spark.log"
LOG_MAX_BYTES = 50 * 1024 * 1024


def spark_log(home: Home) -> Path:
    """``<home>/logs/spark.log``: the log of the Spark JVMs this home's processes start
    (see :data:`SPARK_LOG`)."""
    return home.root / SPARK_LOG


def _open_log(path: Path):
    """``path`` opened for appending (binary, unbuffered), its directory created; a file
    over :data:`LOG_MAX_BYTES` first becomes ``<name>.1`` (replacing an older one). A
    header line names the process and the time the JVM starts."""
    import datetime as dt

    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        if path.stat().st_size > LOG_MAX_BYTES:
            os.replace(path, path.with_name(path.name + ".1"))
    except FileNotFoundError:
        pass
    f = open(path, "ab", buffering=0)  # noqa: SIM115 - handed to the JVM, closed after
    now = dt.datetime.now().astimezone().isoformat(timespec="milliseconds")
    f.write(f"--- {now} Spark driver JVM of streamjob process {os.getpid()} starts\n".encode())
    return f


def _first_line(path: Path, offset: int) -> str:
    """The first non-blank line written to ``path`` after byte ``offset`` ("" if none):
    where a JVM that could not start says why (a missing ``java``, a bad option)."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            lines = f.read(65536).decode("utf-8", "replace").splitlines()
    except OSError:
        return ""
    return next((line.strip() for line in lines if line.strip()), "")


def _launch_gateway(conf: dict[str, str], log: Path | None = None) -> None:
    """Start Spark's driver JVM (the py4j gateway) for ``conf`` and make it the gateway
    pyspark's SparkContext uses.

    With ``log`` (always unless --debug), the JVM's stdout and stderr go to that file
    (appended), so nothing of Spark, the JVM or pyspark's Python workers reaches the
    user's terminal; with --debug they stay on the terminal. The JVM dies with this
    process: pyspark's gateway exits when its stdin, a pipe from this process, reaches
    end of file, which happens when this process ends in any way, ``kill -9`` included
    (tests/integration/test_jvm_death.py). It ignores SIGINT (pyspark's launcher), so
    Ctrl-C at a terminal is this process's to handle.

    The JVM gets :func:`~streamjob.spark.home.worker_spark_home` as ``SPARK_HOME`` when
    there is one (its Python workers then import the installed, byte-compiled pyspark),
    and the class-data sharing options of :mod:`streamjob.spark.cds` (an archive of
    Spark's classes: half the start-up time). No-op if a gateway exists (pyspark then
    reuses it) or when pyspark was started by spark-submit (PYSPARK_GATEWAY_PORT).

    Raises:
        StreamJobError: the JVM exited before it served the gateway (the message names
            the log).
    """
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    from ..exceptions import StreamJobError

    global _archive
    if SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return
    mirror = worker_spark_home()
    cds, _archive = java_options(conf, mirror, debug=log is None)
    if _archive is not None:  # stopped at exit at the latest, so the archive is finished
        atexit.register(stop_spark)
    if cds:
        conf = {**conf, "spark.driver.extraJavaOptions":
                f"{conf.get('spark.driver.extraJavaOptions', '')} {cds}".strip()}
    spark_conf = SparkConf(loadDefaults=False)
    for k, v in conf.items():
        spark_conf.set(k, v)
    saved = os.environ.get("SPARK_HOME")
    if mirror:  # launch_gateway passes os.environ to the JVM; restored right after
        os.environ["SPARK_HOME"] = mirror
    out = _open_log(log) if log is not None else None
    start = out.tell() if out is not None else 0
    preimport = _import_beside(LAUNCH_IMPORTS)  # while the JVM starts (issue 19)
    try:
        gateway = launch_gateway(spark_conf, popen_kwargs=None if out is None
                                 else {"stdout": out, "stderr": out})
    except Exception as exc:  # pyspark's JAVA_GATEWAY_EXITED, or a missing java
        why = " ".join(str(exc).split())
        if log is not None:
            first = _first_line(log, start)
            why = f"{first} (all it said: {log})" if first else f"{why}; see {log}"
        raise StreamJobError(f"Spark's JVM did not start: {why}") from exc
    finally:
        if out is not None:
            out.close()  # the JVM holds its own descriptors
        if mirror:
            if saved is None:
                os.environ.pop("SPARK_HOME", None)
            else:
                os.environ["SPARK_HOME"] = saved
        preimport.join()
    SparkContext._ensure_initialized(gateway=gateway, conf=spark_conf)


#: Modules the session's start imports right after the JVM is up, imported on a thread
#: while the JVM starts instead (:func:`_import_beside`): pyspark's first ``SparkConf``
#: call converts its arguments through ``NumpyArrayConverter.can_convert``, which imports
#: ``pyspark.testing.utils`` and with it pandas, numpy and pyarrow (0.4 s on a quiet
#: machine, 0.6 s under load; py-spy of a cold ``streamjob run``), and the Python side
#: waits on the JVM's launch for 1-2 s meanwhile.
LAUNCH_IMPORTS = ("pyspark.testing.utils", "pyspark.sql.streaming")


def _import_beside(modules) -> threading.Thread:
    """Import ``modules`` (names) on a daemon thread, started here; returns the thread
    (join it before relying on them). A module that fails to import is skipped: the code
    that needs it imports it again and raises there. Never raises."""
    import importlib

    def run() -> None:
        for name in modules:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - raised again by whoever needs it
                pass

    thread = threading.Thread(target=run, name="spark-preimport", daemon=True)
    thread.start()
    return thread


#: The Hive metastore of a session with Hive support: Derby in memory, one per JVM, so no
#: ``metastore_db`` folder is written anywhere; temporary functions and views are all
#: streamjob asks of it (docs/functions.md "Hive UDF jars").
HIVE_METASTORE = "jdbc:derby:memory:streamjob_metastore;create=true"


def hive_conf(conf: dict[str, str]) -> dict[str, str]:
    """``conf`` with Spark's Hive support on, which Hive UDF classes need
    (``spark.sql.catalogImplementation=hive``; Spark 4's in-memory catalog refuses them
    with NO_HANDLER_FOR_UDAF): its metastore in memory (:data:`HIVE_METASTORE`), and
    Derby's log on the JVM's stderr (the Spark log) instead of ``derby.log`` in the
    working directory. Settings the admin gave win. The measured cost is in
    docs/functions.md."""
    out = dict(conf)
    out.setdefault("spark.sql.catalogImplementation", "hive")
    out.setdefault("spark.hadoop.javax.jdo.option.ConnectionURL", HIVE_METASTORE)
    derby = "-Dderby.stream.error.field=java.lang.System.err"
    opts = out.get("spark.driver.extraJavaOptions", "")
    if "derby.stream.error" not in opts:
        out["spark.driver.extraJavaOptions"] = f"{opts} {derby}".strip()
    return out


def spark_session(home: Home, debug: bool = False):
    """The process's SparkSession, created on first use from the home's ``spark.*`` conf.

    Python workers run this interpreter (so they see streamjob and its dependencies)
    unless ``PYSPARK_PYTHON`` names another; on a cluster master the streamjob package
    is shipped to the executors (:func:`ship_package`). When the admin admits jar
    functions (``streamjob.security.functions.jars``, not ``none``) the session has
    Spark's Hive support (:func:`hive_conf`). Spark's own logging is kept to
    errors, and it and everything else the JVM and its Python workers print go to
    :func:`spark_log` (``<home>/logs/spark.log``), unless ``debug``: then Spark logs at
    DEBUG to the terminal.

    Raises:
        StreamJobError: Spark's JVM did not start.
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
        conf.update(SAFE_SQL_CONF)
        if not debug:
            log4j = resources.files("streamjob.resources").joinpath("log4j2.properties")
            conf.setdefault("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log4j}")
        if home.policy.function_jar_dirs:
            conf = hive_conf(conf)
        for k, v in conf.items():
            builder = builder.config(k, v)
        _launch_gateway({"spark.app.name": "streamjob", **conf},
                        log=None if debug else spark_log(home))
        mark("JVM up")
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel("DEBUG" if debug else "ERROR")
        if not debug:
            _quiet_accumulator_server(spark.sparkContext)
        try:
            ship_package(spark.sparkContext)
        except BaseException:
            spark.stop()
            raise
        _spark = spark
        mark("session ready")
        return _spark


def job_session(root, sql_conf: dict[str, str], sources: set[str] | None = None):
    """A session clone for one job: own temp views and SQL conf, shared SparkContext.

    The Python data sources are registered per clone (Spark keeps them per session):
    ``streamjob_kafka`` (Kafka streams), ``streamjob_delta`` (Delta streams),
    ``streamjob_iceberg`` (Iceberg streams), ``streamjob_sql`` and ``streamjob_files`` (static
    tables read at each micro-batch, :mod:`streamjob.connectors.static`); with
    ``sources`` (names, :attr:`streamjob.planner.plan.JobPlan.data_sources`) only those,
    as each registration pickles the source and calls the JVM (issue 19: a cold start
    registers what the job reads).
    Spark pickles them by reference to their modules; on a cluster the executors import
    those from the package zip that :func:`spark_session` shipped before.
    """
    from ..connectors import static
    from ..connectors.delta.options import SOURCE_NAME as DELTA_SOURCE
    from ..connectors.iceberg.options import SOURCE_NAME as ICEBERG_SOURCE
    from ..connectors.kafka.options import SOURCE_NAME as KAFKA_SOURCE

    session = root.newSession()
    if sources is None or KAFKA_SOURCE in sources:
        from ..connectors.kafka.source import KafkaDataSource

        session.dataSource.register(KafkaDataSource)
    if sources is None or DELTA_SOURCE in sources:
        from ..connectors.delta.source import DeltaDataSource

        session.dataSource.register(DeltaDataSource)
    if sources is None or ICEBERG_SOURCE in sources:
        from ..connectors.iceberg.source import IcebergDataSource

        session.dataSource.register(IcebergDataSource)
    for source in (static.SqlStaticDataSource, static.FileStaticDataSource):
        if sources is None or source.name() in sources:
            session.dataSource.register(source)
    for k, v in {**sql_conf, **SAFE_SQL_CONF}.items():
        session.conf.set(k, v)
    return session


def stop_spark() -> None:
    """Stop the process's SparkSession if one was started (a dead JVM is only forgotten).

    When the driver JVM writes the class-data sharing archive (:mod:`streamjob.spark.cds`)
    it is also shut down here, so that the archive is complete and renamed into place
    before this process exits; a later :func:`spark_session` starts a new JVM."""
    global _spark, _archive
    if jvm_exit_code() is not None:
        forget_dead_spark()
        return
    with _lock:
        if _spark is None:
            return
        _spark.stop()
        if _archive is None:
            _spark = None
            return
        from pyspark import SparkContext

        finish_archive(getattr(SparkContext._gateway, "proc", None), _archive)
        _archive = None
    forget_dead_spark()  # the JVM has exited: the next start launches a new one


def _quiet_accumulator_server(sc) -> None:
    """pyspark's accumulator server prints a Python traceback to stderr when the JVM's
    connection to it breaks (the JVM died); streamjob says so in one sentence instead
    (JobManager.spark_died), and the traceback goes to the debug log."""
    import logging

    server = getattr(sc, "_accumulatorServer", None)
    if server is not None:
        server.handle_error = lambda request, address: logging.getLogger(__name__).debug(
            "accumulator connection from %s broke", address, exc_info=True)


def jvm_exit_code() -> int | None:
    """The exit code of this process's Spark driver JVM if it died (killed, out of
    memory, ``System.exit``); None while it runs or when none was started here."""
    if _spark is None:
        return None
    from pyspark import SparkContext

    proc = getattr(SparkContext._gateway, "proc", None)
    return None if proc is None else proc.poll()


def forget_dead_spark() -> None:
    """After the driver JVM died: drop every reference pyspark and streamjob keep to it,
    so that the next :func:`spark_session` starts a new JVM (issue 13 point 11). Jobs
    resume from their checkpoints in the new session."""
    global _spark
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    with _lock:
        gateway = SparkContext._gateway
        SparkContext._gateway = None
        SparkContext._jvm = None
        SparkContext._active_spark_context = None
        SparkSession._instantiatedSession = None
        SparkSession._activeSession = None
        _spark = None
    try:
        if gateway is not None:
            gateway.close()  # its sockets; the JVM is gone
    except Exception:  # noqa: BLE001 - closing a dead gateway may fail in any way
        pass


def prime_class_archive() -> Path | None:
    """Make the archive now, if there is none: start Spark in this process (a scratch
    home, ``local[1]``), run one small query and stop it. ``make setup`` runs it
    (``python -m streamjob.spark``), so the first ``streamjob`` start is already
    fast; without it, the first start makes the archive. Returns the archive's path, or
    None when there is none (turned off, or another process is writing it)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="streamjob-cds-") as tmp:
        home = Home.open(Path(tmp) / "home", {"spark.master": "local[1]"})
        final = archive_path(home.spark_conf, worker_spark_home())
        if final is not None and final.is_file():
            return final
        spark = spark_session(home)
        try:
            spark.range(1000).selectExpr("sum(id)").collect()
        finally:
            stop_spark()
    return final if final is not None and final.is_file() else None

