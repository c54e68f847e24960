"""streamjob on a real Spark standalone cluster (TESTING.md): a master and a worker started
from the pyspark installation on 127.0.0.1, and ``streamjob run FILE --until-idle`` as a
separate driver process with ``spark.master=spark://127.0.0.1:<port>``.

The job reads a Kafka topic (the session's broker), joins a static CSV table and writes
a SQLite table exactly once, with its checkpoint root given as a ``file:///`` URI, and
again as a ``viewfs://`` URI (a Hadoop file system that is not local to streamjob's eyes,
mounting a local directory): streamjob then reads and trims the checkpoint's logs through
Hadoop in the driver's JVM. Two quick tests without the cluster check the shipped zip on
its own and that store operation on a Hadoop URI matches the local one.

The first job also calls a Python function of the home's ``functions/`` directory and a
Hive UDF of a jar there (Slipstream's ``ADD JAR`` + ``CREATE TEMPORARY FUNCTION``, issue
31): the executors get the Python function's code inside the UDF PySpark ships them
(pickled by value: the module is on no path of theirs) and the jar from the driver
(``SparkContext.addJar``, what ``spark.jars`` does), and the results equal pandas'.

"No install on the executors" is shown with an executor Python that cannot import
streamjob: a virtual environment of the same base interpreter whose only addition is a
``.pth`` line naming the project venv's site-packages. Python adds that directory to
``sys.path`` but does not process the ``.pth`` files inside it, so the editable install's
finder (``__editable__.streamjob-*.pth``) never runs there: pyspark, pyarrow,
kafka-python... import, streamjob does not — unless the driver ships it. The driver
names that interpreter in ``PYSPARK_PYTHON``, which is what pyspark hands the
executors (and the driver's own Python planner/streaming-source runners) for every
Python function and data source.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import sysconfig
import time
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from streamjob_tools.dev import flights as nyc
from streamjob_tools.dev.broker import create_topic, free_port


STREAMJOB = str(Path(sys.executable).with_name("streamjob"))
RECORDS = 1000
CARRIERS = {"AA": "American Airlines Inc.", "B6": "JetBlue Airways", "DL": "Delta Air Lines Inc.",
            "UA": "United Air Lines Inc."}
START_TIMEOUT_S = 90
#: The user functions of the first job: a Python one and a Hive one (issue 31).
FUNCTIONS = """
CREATE FUNCTION shout AS 'cluster_udfs:shout' RETURNS STRING;
ADD JAR cluster_udfs.jar;
CREATE TEMPORARY FUNCTION reverse_text AS 'com.example.udf.Reverse';
"""
MODULE = """
import pandas as pd


def shout(s: pd.Series) -> pd.Series:
    return s.str.upper() + "!"
"""
CALLS = "shout(c.name), reverse_text(e.carrier)"
NO_CALLS = "cast(null as string), cast(null as string)"
EXAMPLE_UDF = Path(__file__).resolve().parents[2] / "examples" / "functions" / "Reverse.java"
JOB_TIMEOUT_S = 240

SCRIPT = """
CREATE STREAM events (id INT, carrier STRING, amount DOUBLE)
TBLPROPERTIES("topic"="${TOPIC}", "kafka.broker.list"="${BROKER}", "format"="json",
              "transwarp.consumer.reset.offset.strategy"="earliest");

CREATE TABLE carriers (carrier STRING, name STRING)
STORED AS CSV LOCATION '${DATA}/carriers'
TBLPROPERTIES("skip.header.line.count"="1");

CREATE TABLE landed (id INT, airline STRING, amount DOUBLE, loud STRING, backwards STRING)
TBLPROPERTIES("connector"="sql", "url"="sqlite:///${DB}", "table"="landed");
${FUNCTIONS}
CREATE STREAMJOB cluster_job AS ("
  insert into landed
  select e.id, c.name, e.amount, ${CALLS} from events e join carriers c on e.carrier = c.carrier")
JOBPROPERTIES("morphling.job.checkpoint.interval"="${INTERVAL}",
              "morphling.job.max.records.per.batch"="400",
              "morphling.result.auto.flush"="false"${JOBPROPS});

START STREAMJOB cluster_job;
"""


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _json(url: str) -> dict | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return json.loads(resp.read())
    except (OSError, ValueError):
        return None


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"({path} unreadable)"


@dataclass
class Cluster:
    """A running standalone master and worker on 127.0.0.1."""

    url: str  # spark://127.0.0.1:<port>
    ui: str  # http://127.0.0.1:<webui port>
    work_dir: Path  # the worker's application work dirs

    def state(self) -> dict:
        """The master's ``/json/`` document (workers, active and completed apps)."""
        data = _json(f"{self.ui}/json/")
        assert data is not None, f"master web UI {self.ui} does not answer"
        return data


def _clean_env(spark_home: Path, base: Path) -> dict:
    """The environment of the master and worker: no PYTHONPATH, no virtualenv, only what
    Java and Spark need."""
    env = {k: v for k, v in os.environ.items()
           if k in ("PATH", "HOME", "JAVA_HOME", "LANG", "LC_ALL", "TMPDIR", "USER")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if not p.startswith(str(Path(sys.executable).parent)))
    env.update({"SPARK_HOME": str(spark_home), "SPARK_LOCAL_IP": "127.0.0.1",
                "SPARK_LOG_DIR": str(base / "logs"), "SPARK_PID_DIR": str(base)})
    return env


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A Spark standalone master and one worker (1 core, 1 GiB) started from the pyspark
    installation, each on free ports of 127.0.0.1, with a clean environment and a working
    directory outside the project; ready once the master lists the worker ALIVE."""
    spark_home = _spark_home()
    spark_class = spark_home / "bin" / "spark-class"
    if not spark_class.exists():
        pytest.fail(f"{spark_class} is missing: the pyspark installation has no launcher")
    base = tmp_path_factory.mktemp("spark-cluster")
    env = _clean_env(spark_home, base)
    port, ui_port, worker_ui = free_port(), free_port(), free_port()
    url, ui = f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui_port}"
    work_dir = base / "work"
    procs: list[tuple[subprocess.Popen, Path]] = []

    def launch(name: str, *args: str) -> subprocess.Popen:
        log = base / f"{name}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen([str(spark_class), *args], cwd=base, env=env, stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        procs.append((proc, log))
        return proc

    def wait(what: str, ready) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not ready():
            for proc, log in procs:
                if proc.poll() is not None:
                    pytest.fail(f"{log.stem} exited ({proc.returncode}) before {what}:\n{_tail(log)}")
            if time.monotonic() > deadline:
                pytest.fail(f"no {what} within {START_TIMEOUT_S} s:\n"
                            + "\n".join(_tail(log) for _, log in procs))
            time.sleep(0.2)

    try:
        launch("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
               "--port", str(port), "--webui-port", str(ui_port))
        wait("master web UI", lambda: _json(f"{ui}/json/") is not None)
        launch("worker", "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
               "--cores", "1", "--memory", "1g", "--webui-port", str(worker_ui),
               "--work-dir", str(work_dir))
        wait("ALIVE worker", lambda: any(
            w.get("state") == "ALIVE" for w in (_json(f"{ui}/json/") or {}).get("workers", [])))
        yield Cluster(url, ui, work_dir)
    finally:
        for proc, _ in reversed(procs):  # the worker first: it takes its executors along
            _stop(proc)


@pytest.fixture(scope="module")
def python_without_streamjob(tmp_path_factory) -> str:
    """An interpreter with streamjob's dependencies but not streamjob (see the module
    docstring); returns its path."""
    base = tmp_path_factory.mktemp("executor-python")
    venv = base / "venv"
    subprocess.run([sys._base_executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   capture_output=True, timeout=60)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    Path(purelib, "streamjob_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {"PATH": os.environ.get("PATH", "")}
    probe = "import pyspark, pyarrow, kafka, sqlalchemy; import streamjob"
    res = subprocess.run([str(python), "-c", probe], cwd=base, env=env, capture_output=True,
                         text=True, timeout=120)
    assert "No module named 'streamjob'" in res.stderr, (
        f"the executor Python must have the dependencies but not streamjob: {res.stderr}")
    return str(python)


def _produce(bootstrap: str, topic: str) -> dict[int, tuple[str, float]]:
    """RECORDS JSON events on one partition (the last sent alone, TESTING.md)."""
    create_topic(bootstrap, topic, 1)
    codes = sorted(CARRIERS)
    events = {i: (codes[i % len(codes)], i / 8) for i in range(RECORDS)}
    nyc.replay(bootstrap, topic, [json.dumps({"id": i, "carrier": c, "amount": a}).encode()
                                  for i, (c, a) in events.items()])
    return events


def _app_dirs(cluster: Cluster) -> list[Path]:
    return sorted(cluster.work_dir.glob("app-*")) if cluster.work_dir.exists() else []


@dataclass
class Run:
    """One ``streamjob run FILE --until-idle`` driver process against the cluster."""

    events: dict[int, tuple[str, float]]
    topic: str
    env: dict
    db: Path
    app_dir: Path  # the worker's work dir of the run's application
    seconds: float

    def rows(self, functions: bool = False) -> list[tuple]:
        columns = "id, airline, amount" + (", loud, backwards" if functions else "")
        with sqlite3.connect(self.db) as conn:
            return conn.execute(f"SELECT {columns} FROM landed").fetchall()

    def expected(self) -> list[tuple]:
        return [(i, CARRIERS[c], a) for i, (c, a) in sorted(self.events.items())]

    def cli(self, *args: str) -> str:
        res = subprocess.run([STREAMJOB, *args], env=self.env, capture_output=True, text=True,
                             timeout=60)
        assert res.returncode == 0, res.stdout + res.stderr
        return res.stdout


def _run(cluster: Cluster, python: str, bootstrap: str, tmp_path: Path, checkpoint_root: str,
         jobprops: str = "", interval: str = "1000", jar: Path | None = None, **conf: str) -> Run:
    """Produce the topic, then run the script in a separate driver process whose
    ``spark.master`` is the cluster and whose Python workers run ``python``; with
    ``jar`` (the example Hive UDF's) the job calls :data:`FUNCTIONS` too, their code in
    the home's ``functions/``."""
    home, data = tmp_path / "home", tmp_path / "data"
    if jar is not None:
        (home / "functions").mkdir(parents=True)
        (home / "functions" / "cluster_udfs.py").write_text(MODULE)
        (home / "functions" / "cluster_udfs.jar").write_bytes(jar.read_bytes())
    (data / "carriers").mkdir(parents=True)
    (data / "carriers" / "carriers.csv").write_text(
        "carrier,name\n" + "".join(f"{c},{n}\n" for c, n in CARRIERS.items()))
    db = tmp_path / "landed.db"
    topic = f"cluster_{uuid.uuid4().hex[:8]}"
    events = _produce(bootstrap, topic)
    script = tmp_path / "cluster.sql"
    script.write_text(SCRIPT.replace("${JOBPROPS}", jobprops).replace("${INTERVAL}", interval)
                      .replace("${FUNCTIONS}", FUNCTIONS if jar is not None else "")
                      .replace("${CALLS}", CALLS if jar is not None else NO_CALLS))
    before = set(_app_dirs(cluster))

    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    env.update({"STREAMJOB_HOME": str(home), "PYSPARK_PYTHON": python,
                "TOPIC": topic, "BROKER": bootstrap, "DATA": str(data), "DB": str(db)})
    conf = {"spark.master": cluster.url, "spark.driver.host": "127.0.0.1",
            "spark.executor.memory": "512m", "spark.cores.max": "1",
            "spark.morphling.taskstate.checkpoint.directory": checkpoint_root, **conf}
    args = [STREAMJOB, *(a for k, v in conf.items() for a in ("--conf", f"{k}={v}")),
            "run", str(script), "--until-idle"]
    started = time.monotonic()
    res = subprocess.run(args, env=env, cwd=tmp_path, capture_output=True, text=True,
                         timeout=JOB_TIMEOUT_S)
    seconds = time.monotonic() - started
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Traceback" not in res.stderr, res.stderr
    new = [d for d in _app_dirs(cluster) if d not in before]
    assert len(new) == 1, f"expected one new application on the worker, got {new}"
    return Run(events, topic, env, db, new[0], seconds)


def _commits(job_dir: Path, log: str = "commits") -> list[int]:
    return sorted(int(p.name) for p in (job_dir / log).iterdir() if p.name.isdigit())


@pytest.mark.system
@pytest.mark.slow  # a Spark master and worker of their own: 45 s of a worker (CI budget)
def test_a_kafka_job_runs_on_the_cluster_with_the_package_shipped(
        cluster, python_without_streamjob, broker, tmp_path, tmp_path_factory):
    """The job's Kafka source and static table run on the worker's executor, whose Python
    cannot import streamjob but for the zip the driver shipped; every record lands once;
    the checkpoints live under a ``file:///`` root. Its Python function and Hive UDF run
    on the executor, their code shipped by Spark, with the results pandas gives."""
    import pandas as pd

    from streamjob_tools.dev.hive_jar import build_jar

    jar = build_jar([EXAMPLE_UDF], tmp_path_factory.mktemp("udf-jar") / "cluster_udfs.jar")
    checkpoints = tmp_path / "checkpoints"
    run = _run(cluster, python_without_streamjob, broker.bootstrap, tmp_path,
               checkpoints.as_uri(), jar=jar)

    # every record landed exactly once, joined with the static table; the functions'
    # columns are what pandas computes from the records
    rows = run.rows(functions=True)
    assert len(rows) == RECORDS, f"{len(rows)} rows for {RECORDS} records"
    assert sorted(r[:3] for r in rows) == run.expected()
    frame = pd.DataFrame([(i, c) for i, (c, _) in sorted(run.events.items())],
                         columns=["id", "carrier"])
    want = pd.DataFrame({"id": frame["id"],
                         "loud": frame["carrier"].map(CARRIERS).str.upper() + "!",
                         "backwards": frame["carrier"].str[::-1]})
    got = pd.DataFrame(sorted((r[0], r[3], r[4]) for r in rows),
                       columns=["id", "loud", "backwards"])
    pd.testing.assert_frame_equal(got, want, check_dtype=False)

    # the checkpoints are under the file:/// root, and recorded as Spark committed them
    job_dir = checkpoints / "default" / "cluster_job"
    commits = _commits(job_dir)
    assert commits, f"no committed batch in {job_dir}"
    retained = json.loads(run.cli("checkpoints", "cluster_job", "--json"))
    ids = [c["checkpoint_id"] for c in retained]
    # Spark's commit log holds every micro-batch from the oldest retained checkpoint on,
    # and the last one (the stop) is a checkpoint (DESIGN §4)
    assert commits == list(range(ids[0], ids[-1] + 1)), (commits, ids)
    assert retained[-1]["source_offsets"] == {run.topic: {"0": RECORDS}}

    # it ran on the cluster: the master knows the application, and the worker's executor
    # fetched the shipped package and ran the Python tasks (the sources' reads)
    state = cluster.state()
    apps = {a["id"]: a for a in state.get("completedapps", []) + state.get("activeapps", [])
            if a.get("name") == "streamjob"}
    assert run.app_dir.name in apps, state
    executor_dirs = [d for d in run.app_dir.iterdir() if d.is_dir()]
    shipped = [z for d in executor_dirs for z in d.glob("streamjob-*.zip")]
    assert shipped, f"the executor did not fetch the package: {list(run.app_dir.rglob('*'))}"
    stderr = "\n".join((d / "stderr").read_text(errors="replace") for d in executor_dirs)
    assert "Fetching spark://127.0.0.1:" in stderr and shipped[0].name in stderr
    assert "Starting Python task execution" in stderr and "Finished task" in stderr
    # the Hive UDF's jar reached the executor from the driver (addJar: spark.jars' way);
    # the Python function's module did not need to: its code travels in the UDF
    fetched = [j for d in executor_dirs for j in d.glob("cluster_udfs*.jar")]
    assert fetched and f"/jars/cluster_udfs.jar" in stderr, stderr[-3000:]
    assert not [p for p in run.app_dir.rglob("cluster_udfs.py")]
    print(f"cluster job: {run.seconds:.1f} s, checkpoints {commits}, app {run.app_dir.name}, "
          f"shipped {shipped[0].name}, {fetched[0].name}")


@pytest.mark.system
@pytest.mark.slow
def test_checkpoints_on_a_hadoop_uri_are_read_and_trimmed_through_hadoop(
        cluster, python_without_streamjob, broker, tmp_path):
    """A checkpoint root that is not a local path: ``viewfs://`` (Hadoop's mount-table
    file system, here mounting a local directory, so no HDFS is needed). Spark writes the
    checkpoint through it, and streamjob reads its commit log (the recorder), recovers
    and trims it through Hadoop's FileSystem in the driver's JVM: after the run the
    commit log holds exactly the retained checkpoints (interval 0: every micro-batch is
    one)."""
    mount = f"sj{uuid.uuid4().hex[:8]}"
    local = tmp_path / "mounted"
    local.mkdir()
    run = _run(cluster, python_without_streamjob, broker.bootstrap, tmp_path,
               f"viewfs://{mount}/checkpoints",
               jobprops=',\n              "morphling.checkpoint.retained"="2"',
               interval="0",  # every micro-batch a checkpoint: older ones are trimmed
               **{f"spark.hadoop.fs.viewfs.mounttable.{mount}.link./checkpoints": local.as_uri()})
    assert sorted(run.rows()) == run.expected()

    job_dir = local / "default" / "cluster_job"
    retained = json.loads(run.cli("checkpoints", "cluster_job", "--json"))
    ids = [c["checkpoint_id"] for c in retained]
    assert len(ids) == 2 and ids[-1] >= 2, ids  # 1,000 records at most 400 a batch
    assert _commits(job_dir) == ids  # trimmed through Hadoop right after each checkpoint
    # its identity, written through Hadoop: only this job's uid may delete it (issue 28)
    job_uid = json.loads(run.cli("describe", "cluster_job", "--json"))["uid"]
    assert json.loads((job_dir / "streamjob.json").read_text())["job_uid"] == job_uid
    assert _commits(job_dir, "offsets") == [ids[0] - 1, *ids]
    assert retained[-1]["source_offsets"] == {run.topic: {"0": RECORDS}}
    print(f"viewfs job: {run.seconds:.1f} s, checkpoints {ids}")


@pytest.mark.system
def test_the_shipped_zip_imports_where_streamjob_is_not_installed(python_without_streamjob, tmp_path):
    """What the executors get: the zip alone makes the sources' modules and the package
    data importable in a Python without streamjob; local masters ship nothing."""
    import zipfile

    from streamjob.spark.session import is_local_master, package_zip

    path = package_zip()
    assert package_zip() == path  # built once per process
    names = set(zipfile.ZipFile(path).namelist())
    assert {"streamjob/__init__.py", "streamjob/connectors/kafka/source.py",
            "streamjob/grammar/streamsql.lark", "streamjob/resources/log4j2.properties"} <= names
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
    probe = (
        "import sys; sys.path.insert(1, sys.argv[1]);"
        "import streamjob, streamjob.connectors.kafka.source, streamjob.connectors.static;"
        "from importlib import resources;"
        "assert streamjob.__file__.startswith(sys.argv[1]), streamjob.__file__;"
        "print(resources.files('streamjob.grammar').joinpath('streamsql.lark').is_file())")
    res = subprocess.run([python_without_streamjob, "-c", probe, path], cwd=tmp_path,
                         env={"PATH": os.environ.get("PATH", "")}, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0 and res.stdout.strip() == "True", res.stdout + res.stderr
    assert all(is_local_master(m) for m in ("local", "local[*]", "local[2]", "local[2,3]"))
    assert not any(is_local_master(m) for m in ("spark://127.0.0.1:7077", "yarn",
                                                "k8s://https://h:6443", "local-cluster[2,1,1024]"))


def _fake_checkpoint(job_dir: Path, batches: int) -> None:
    """Offset and commit logs (with Hadoop's .crc companions) as Spark writes them."""
    for log in ("offsets", "commits"):
        (job_dir / log).mkdir(parents=True)
        for i in range(batches):
            body = (f'v1\n{{"batchWatermarkMs":0,"batchTimestampMs":{i}}}\n{{"t": {{"0": {i * 10}}}}}'
                    if log == "offsets" else 'v1\n{"nextBatchWatermarkMs":0}')
            (job_dir / log / str(i)).write_text(body)
            (job_dir / log / f".{i}.crc").write_bytes(b"crc")


@pytest.mark.spark
def test_the_hadoop_layer_of_the_checkpoint_store_matches_the_local_one(tmp_path):
    """Every checkpoint-store operation on a non-local URI (``viewfs://`` over a local
    directory, through Hadoop in a local Spark session's JVM) gives what the same
    operation gives on the directory itself (without a Spark session it is a clear
    CheckpointError: tests/unit/test_sinks_and_store.py). The process's Spark (started
    here if none runs, local[2] as the worlds') stays for the worker's next module."""
    from streamjob.spark import session as engine
    from streamjob.checkpoint import store
    from streamjob.exceptions import CheckpointError
    from streamjob.home import Home

    local, hadoop = tmp_path / "local", tmp_path / "hadoop"
    for root in (local, hadoop):
        _fake_checkpoint(root / "default" / "job", 6)
    mount = f"sj{uuid.uuid4().hex[:8]}"
    spark = engine.spark_session(Home.open(tmp_path / "home", {"spark.master": "local[2]"}))
    spark._jsc.hadoopConfiguration().set(f"fs.viewfs.mounttable.{mount}.link./ck",
                                          hadoop.as_uri())
    roots = {"local": local.as_uri(), "hadoop": f"viewfs://{mount}/ck"}
    dirs = {k: f"{r}/default/job" for k, r in roots.items()}
    seen = {}
    for kind, d in dirs.items():
        seen[kind] = [
            store.log_ids(d, "offsets"), store.log_ids(d, "commits"),
            store.is_committed(d, 5), store.is_committed(d, 6),
            store.committed_offsets(d)[:2],
            store.trim_logs(d, 3) > 0, store.log_ids(d, "offsets"), store.log_ids(d, "commits"),
            store.truncate_after(d, 4) > 0, store.log_ids(d, "offsets"),
            store.log_ids(d, "commits"), store.committed_offsets(d)[:2],
        ]
    assert seen["hadoop"] == seen["local"]
    assert seen["hadoop"][:5] == [[0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 4, 5], True, False,
                                  (5, ['{"t": {"0": 50}}'])]
    assert seen["hadoop"][5:] == [True, [2, 3, 4, 5], [3, 4, 5], True, [2, 3, 4], [3, 4],
                                  (4, ['{"t": {"0": 40}}'])]
    # the same files are left (Hadoop's local file system deletes a file's .crc with it)
    for root in (local, hadoop):
        assert sorted(p.name for p in (root / "default" / "job" / "commits").iterdir()) == [
            ".3.crc", ".4.crc", "3", "4"]
    with pytest.raises(CheckpointError, match="not inside"):
        store.purge(dirs["hadoop"], "viewfs://elsewhere/ck")
    # issue 28 point 5: a Hadoop directory carries its identity too, and only the
    # uid it names deletes it; one without identity is never deleted
    from types import SimpleNamespace

    from streamjob.checkpoint import identity

    kept = identity.purge_owned(dirs["hadoop"], roots["hadoop"], "A")
    assert not kept.deleted and "no identity" in kept.kept
    assert (hadoop / "default" / "job" / "commits" / "3").exists()
    job = SimpleNamespace(uid="A", qualified_name="default.job", name="job")
    adopted = identity.prepare(dirs["hadoop"], job, None)  # logs, no identity: adopted
    assert adopted == identity.Identity("A", "")
    assert identity.read(dirs["hadoop"]) == adopted
    assert (hadoop / "default" / "job" / identity.FILE_NAME).exists()
    assert identity.purge_owned(dirs["hadoop"], roots["hadoop"], "B").kept  # not B's
    assert identity.purge_owned(dirs["hadoop"], roots["hadoop"], "A").deleted
    assert not (hadoop / "default" / "job").exists()


@pytest.mark.spark
def test_the_hadoop_layer_of_the_watermark_step_matches_the_local_one(tmp_path):
    """Issue 34's checkpoint operations on a non-local URI (``viewfs://`` over a local
    directory) give what they give on the directory itself: the newest batch's
    watermarks and state, the restart's no-data batch entry (written atomically through
    Hadoop, never over an entry) and the file stream's committed files."""
    import json

    from streamjob.checkpoint import entries
    from streamjob.checkpoint.watermark import last_step, schedule_released_batch
    from streamjob.home import Home
    from streamjob.spark import session as engine

    local, hadoop = tmp_path / "local", tmp_path / "hadoop"
    for root in (local, hadoop):
        job = root / "default" / "job"
        _fake_checkpoint(job, 2)
        (job / "commits" / "1").write_text('v1\n{"nextBatchWatermarkMs":5000}')
        (job / "state" / "0" / "0").mkdir(parents=True)
        (job / "sources" / "0").mkdir(parents=True)
        (job / "sources" / "0" / "0").write_text(
            'v1\n{"path":"file:///in/a.json","timestamp":1,"batchId":0}')
    mount = f"sj{uuid.uuid4().hex[:8]}"
    spark = engine.spark_session(Home.open(tmp_path / "home", {"spark.master": "local[2]"}))
    spark._jsc.hadoopConfiguration().set(f"fs.viewfs.mounttable.{mount}.link./ck",
                                          hadoop.as_uri())
    dirs = {"local": f"{local.as_uri()}/default/job",
            "hadoop": f"viewfs://{mount}/ck/default/job"}
    seen = {kind: [last_step(d), entries.has_state(d), entries.committed_source_files(d),
                   schedule_released_batch(d, now_ms=7), schedule_released_batch(d),
                   last_step(d), entries.read_entry(d, "offsets", 2),
                   entries.read_entry(d, "offsets", 9)]
            for kind, d in dirs.items()}
    assert seen["hadoop"] == seen["local"]
    step, state, files, written, again, after, entry, missing = seen["hadoop"]
    assert (step.batch_id, step.watermark_ms, step.next_ms, step.releases) == (1, 0, 5000, True)
    assert state and files == set() and written == 2 and again is None and missing is None
    assert after.constructed
    assert json.loads(entry[1]) == {"batchWatermarkMs": 5000, "batchTimestampMs": 7}
    assert entry[2] == '{"t": {"0": 10}}'
    assert not [p for p in (hadoop / "default" / "job" / "offsets").iterdir()
                if p.name.endswith(".tmp")]
