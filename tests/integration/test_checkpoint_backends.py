"""The three checkpoint backends (DESIGN §4) against real stores: the catalog (SQLite),
a standalone ZooKeeper and the session's Kafka-compatible broker.

The contract tests run the same functions over each backend; then one real job per
backend runs through Spark (in-process manager, shared session) with many small
checkpoints, and the backend, ``streamjob checkpoints --json`` and DROP are checked.
"""

from __future__ import annotations

import json
import os
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace

import pytest

from streamjob.catalog import Catalog
from streamjob.catalog.records import CheckpointInfo
from streamjob.client.check import scratch_catalog
from streamjob.checkpoint.backends import backend_for_job, open_backend
from streamjob.checkpoint.backends.kafka import DEFAULT_TOPIC, KafkaBackend
from streamjob.checkpoint.backends.zookeeper import ZooKeeperBackend
from streamjob_tools.dev.broker import create_topic
from streamjob_tools.dev.flights import replay
from streamjob.exceptions import ConnectorError, JobError, PropertyError
from streamjob.executor import Executor
from streamjob.grammar import parse_script
from streamjob.home import Home

#: Seconds this module takes on a fast host: make test hands the longest modules out first
#: (tests/conftest.py), so the run does not end on one of them while the other worker idles.
EXPECTED_S = 40



BACKENDS = ("catalog", "zookeeper", "kafka")
T0 = datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def env(tmp_path_factory, zookeeper, broker):
    """A streamjob home whose streamjob.conf points at the session's ZooKeeper (under a
    root of its own), its SQLite catalog, and the broker's address."""
    home_dir = tmp_path_factory.mktemp("backends") / "home"
    home_dir.mkdir()
    root = f"/sjtest_{uuid.uuid4().hex[:8]}"
    (home_dir / "streamjob.conf").write_text(
        f"spark.master=local[2]\nspark.sql.shuffle.partitions=2\n"
        f"spark.morphling.zookeeper.quorum={zookeeper}\n"
        f"spark.morphling.zookeeper.root.path={root}\n")
    home = Home.open(home_dir)
    catalog = Catalog(home.catalog_url)
    yield SimpleNamespace(home=home, catalog=catalog, root=root, zookeeper=zookeeper,
                          bootstrap=broker.bootstrap)
    catalog.close()


@pytest.fixture
def zk_client(env):
    from kazoo.client import KazooClient

    client = KazooClient(hosts=env.zookeeper)
    client.start(timeout=10)
    yield client
    client.stop()
    client.close()


@pytest.fixture(params=BACKENDS)
def backend(request, env):
    b = open_backend(request.param, catalog=env.catalog, home=env.home, bootstrap=env.bootstrap)
    yield b
    b.close()


@pytest.fixture
def make_job(env):
    """Registers a job of a fresh name in the catalog (the catalog backend records only
    for known uids) and returns its JobInfo."""
    def make():
        name = f"j{uuid.uuid4().hex[:8]}"
        env.catalog.create_job("default", name, "insert into t select * from s", {}, [])
        return env.catalog.get_job("default", name)
    return make


def _cp(job, cid: int, **kw) -> CheckpointInfo:
    values = dict(job_uid=job.uid, checkpoint_id=cid, started_at=T0 + timedelta(seconds=cid),
                  ended_at=T0 + timedelta(seconds=cid, milliseconds=250), duration_ms=250,
                  source_offsets={"t": {"0": cid * 10, "1": cid * 7}}, input_rows=cid * 3,
                  state_rows=None, status="COMPLETED", fingerprint=None)
    values.update(kw)
    return CheckpointInfo(**values)


def _ids(cps) -> list[int]:
    return [c.checkpoint_id for c in cps]


# ------------------------------------------------------------ the contract, per backend


@pytest.mark.component
def test_retention_keeps_exactly_the_highest_ids(backend, make_job):
    job, other = make_job(), make_job()
    backend.record(other, _cp(other, 0), retained=5)
    for cid in range(25):
        backend.record(job, _cp(job, cid), retained=5)
    assert _ids(backend.list(job)) == [20, 21, 22, 23, 24]
    assert _ids(backend.list(other)) == [0]
    backend.record(job, _cp(job, 25), retained=2)  # a smaller retention applies at once
    assert _ids(backend.list(job)) == [24, 25]


@pytest.mark.component
def test_recording_an_id_again_replaces_it(backend, make_job):
    job = make_job()
    for cid in range(3):
        backend.record(job, _cp(job, cid), retained=5)
    before = backend.list(job)
    backend.record(job, _cp(job, 1), retained=5)
    assert backend.list(job) == before
    backend.record(job, _cp(job, 2, status="LATE", input_rows=99), retained=5)
    cps = backend.list(job)
    assert _ids(cps) == [0, 1, 2] and (cps[2].status, cps[2].input_rows) == ("LATE", 99)


@pytest.mark.component
def test_truncate_removes_the_later_ids(backend, make_job):
    job = make_job()
    for cid in range(6):
        backend.record(job, _cp(job, cid), retained=10)
    assert backend.truncate(job, after=3) == 2
    assert _ids(backend.list(job)) == [0, 1, 2, 3]
    assert backend.truncate(job, after=3) == 0
    backend.record(job, _cp(job, 4), retained=10)  # the job goes on after a restore
    assert _ids(backend.list(job)) == [0, 1, 2, 3, 4]
    assert backend.truncate(job, after=-1) == 5
    assert backend.list(job) == [] and backend.latest(job) is None


@pytest.mark.component
def test_purge_removes_the_job_and_nothing_of_another(backend, make_job):
    job, other = make_job(), make_job()
    for cid in range(3):
        backend.record(job, _cp(job, cid), retained=5)
    for cid in range(2):
        backend.record(other, _cp(other, cid), retained=5)
    assert backend.purge(job) == 3
    assert backend.list(job) == [] and backend.latest(job) is None
    assert _ids(backend.list(other)) == [0, 1]
    assert backend.purge(job) == 0
    backend.record(job, _cp(job, 5), retained=5)
    assert _ids(backend.list(job)) == [5]


@pytest.mark.component
@pytest.mark.parametrize("which", ["zookeeper", "kafka"])
def test_purge_acts_by_uid_never_by_name(which, env, make_job):
    """Issue 28 point 5: a job dropped and created again under its name is another
    incarnation (another uid). The old incarnation's purge (a late DROP) must not delete
    the new one's records, nor the reverse. On the main of 2026-11-27 the ZooKeeper and
    Kafka backends purged every uid of the name."""
    from streamjob.checkpoint.backends.base import JobRef

    job = make_job()
    old = JobRef(uuid.uuid4().hex, job.database, job.name)  # the same name, another uid
    with open_backend(which, catalog=env.catalog, home=env.home, bootstrap=env.bootstrap) as b:
        for cid in range(3):
            b.record(old, _cp(old, cid), retained=5)
        for cid in range(2):
            b.record(job, _cp(job, cid), retained=5)
        assert b.purge(old) == 3
        assert b.list(old) == []
        assert _ids(b.list(job)) == [0, 1]
        b.record(old, _cp(old, 7), retained=5)
        assert b.purge(job) == 2  # and the reverse
        assert b.list(job) == [] and _ids(b.list(old)) == [7]
        assert b.purge(old) == 1
    with open_backend(which, catalog=env.catalog, home=env.home, bootstrap=env.bootstrap) as b:
        assert b.list(job) == [] and b.list(old) == []  # read afresh from the store


@pytest.mark.component
def test_list_is_ascending_and_latest_is_the_highest(backend, make_job):
    job, empty = make_job(), make_job()
    for cid in (7, 3, 11, 5, 0):
        backend.record(job, _cp(job, cid), retained=10)
    assert _ids(backend.list(job)) == [0, 3, 5, 7, 11]
    assert backend.latest(job).checkpoint_id == 11
    assert backend.list(empty) == [] and backend.latest(empty) is None


@pytest.mark.component
def test_records_round_trip_every_field(backend, make_job):
    job = make_job()
    full = CheckpointInfo(
        job_uid=job.uid, checkpoint_id=7, started_at=T0,
        ended_at=T0 + timedelta(seconds=1, microseconds=5), duration_ms=1000,
        source_offsets={"flights": {"0": 168388, "1": 12}, "rate": {"x": [1, "a", None]}},
        input_rows=300, state_rows=42, status="LATE", fingerprint="sha256:0123abcd")
    sparse = CheckpointInfo(
        job_uid=job.uid, checkpoint_id=8, started_at=T0, ended_at=None, duration_ms=None,
        source_offsets=None, input_rows=0, state_rows=None, status="EXPIRED", fingerprint=None)
    backend.record(job, full, retained=5)
    backend.record(job, sparse, retained=5)
    assert backend.list(job) == [full, sparse]
    assert backend.latest(job) == sparse
    naive = _cp(job, 9, started_at=datetime(2024, 1, 2, 3, 4, 5, 600000),
                ended_at=datetime(2024, 1, 2, 5, 4, 5, 600000,
                                  tzinfo=timezone(timedelta(hours=2))))
    backend.record(job, naive, retained=5)
    got = backend.latest(job)
    assert got.started_at == datetime(2024, 1, 2, 3, 4, 5, 600000, tzinfo=timezone.utc)
    assert got.ended_at == got.started_at and got.started_at.tzinfo == timezone.utc


@pytest.mark.component
def test_bad_records_are_refused(backend, make_job):
    job = make_job()
    with pytest.raises(ValueError, match="retained must be at least 1"):
        backend.record(job, _cp(job, 0), retained=0)
    with pytest.raises(ValueError, match="checkpoint status"):
        backend.record(job, _cp(job, 0, status="DONE"), retained=5)
    assert backend.list(job) == []


# ------------------------------------------------------------------------- zookeeper


@pytest.mark.component
def test_zookeeper_layout_running_znode_and_purge_scope(env, make_job, zk_client):
    job, other = make_job(), make_job()
    base = f"{env.root}/default"
    node = f"{base}/checkpoints/default.{job.name}"
    running = f"{base}/jobs/default.{job.name}"
    zkb = open_backend("zookeeper", catalog=env.catalog, home=env.home)
    try:
        zkb.record(job, _cp(job, 12), retained=5)
        zkb.record(other, _cp(other, 1), retained=5)
        data, _ = zk_client.get(f"{node}/{job.uid}/0000000012")
        stored = json.loads(data)
        assert stored["checkpoint_id"] == 12 and stored["started_at"] == "2024-05-06T07:08:21.123456+00:00"

        zkb.mark_running(job)
        data, stat = zk_client.get(running)
        mark = json.loads(data)
        assert stat.ephemeralOwner != 0
        assert (mark["uid"], mark["pid"]) == (job.uid, os.getpid()) and mark["host"]
        zkb.clear_running(job)
        zk_client.sync(running)
        assert zk_client.exists(running) is None
        zkb.mark_running(job)
    finally:
        zkb.close()
    zk_client.sync(running)
    assert zk_client.exists(running) is None, "the ephemeral mark goes with the session"

    # a mark held by a live process elsewhere is refused, naming it
    zk_client.create(running, json.dumps({"host": "elsewhere", "pid": 1}).encode(),
                     ephemeral=True)
    with open_backend("zookeeper", catalog=env.catalog, home=env.home) as zkb:
        with pytest.raises(ConnectorError, match="already running on host elsewhere"):
            zkb.mark_running(job)
        zkb.clear_running(job)  # not ours: left alone
        assert zk_client.exists(running) is not None
        assert zkb.purge(job) == 1
    zk_client.delete(running)
    assert zk_client.exists(node) is None
    assert zk_client.exists(f"{base}/checkpoints/default.{other.name}/{other.uid}/0000000001")
    assert zk_client.exists(f"{base}/checkpoints") is not None


@pytest.mark.component
def test_zookeeper_errors_name_the_quorum_property(tmp_path):
    with pytest.raises(ConnectorError, match=r"cannot reach ZooKeeper at 127\.0\.0\.1:1 "
                                             r"\(spark\.morphling\.zookeeper\.quorum\)"):
        ZooKeeperBackend("127.0.0.1:1", connect_timeout_s=1)
    bare = Home.open(tmp_path / "bare")
    with pytest.raises(PropertyError, match=r"needs the engine property "
                                            r"spark\.morphling\.zookeeper\.quorum"):
        open_backend("zookeeper", catalog=None, home=bare)


# ----------------------------------------------------------------------------- kafka


@pytest.mark.component
def test_kafka_topic_is_compacted_and_retention_writes_tombstones(env, make_job):
    from kafka import KafkaConsumer, TopicPartition

    job = make_job()
    with KafkaBackend(env.bootstrap) as kb:
        assert kb.topic_config().get("cleanup.policy") == "compact"
        for cid in range(4):
            kb.record(job, _cp(job, cid), retained=2)
        assert _ids(kb.list(job)) == [2, 3]
    consumer = KafkaConsumer(bootstrap_servers=env.bootstrap, group_id=None,
                             enable_auto_commit=False)
    try:
        tp = TopicPartition(DEFAULT_TOPIC, 0)
        consumer.assign([tp])
        end = consumer.end_offsets([tp])[tp]
        consumer.seek_to_beginning(tp)
        last: dict[str, bytes | None] = {}
        while consumer.position(tp) < end:
            for r in consumer.poll(timeout_ms=500).get(tp, []):
                last[r.key.decode()] = r.value
    finally:
        consumer.close()
    prefix = f"default.{job.name}/{job.uid}/"
    assert {k[len(prefix):]: v is None for k, v in last.items() if k.startswith(prefix)} == {
        "0000000000": True, "0000000001": True, "0000000002": False, "0000000003": False}


@pytest.mark.component
def test_kafka_errors(env, tmp_path):
    with pytest.raises(ConnectorError, match=r"Kafka broker at 127\.0\.0\.1:1"):
        KafkaBackend("127.0.0.1:1", timeout_s=1)
    catalog = Catalog(f"sqlite:///{tmp_path / 'c.db'}")
    ex = Executor(catalog, env.home)
    script = f"""
    CREATE STREAM ticks (timestamp TIMESTAMP, value BIGINT) TBLPROPERTIES("source"="rate");
    CREATE TABLE sink (value BIGINT) STORED AS JSON LOCATION '{tmp_path / "sink"}';
    CREATE STREAMJOB j AS ("insert into sink select value from ticks")
      JOBPROPERTIES("morphling.checkpoint.backend"="kafka");
    """
    stmts = parse_script(script)
    for stmt in stmts[:2]:
        ex.execute(stmt)
    with pytest.raises(PropertyError, match="but streamjob default.j reads no Kafka stream; "
                                            "use catalog or zookeeper") as info:
        ex.execute(stmts[2])
    assert (info.value.line, info.value.column) == (5, 52)  # at the value "kafka"
    assert catalog.get_job("default", "j") is None
    catalog.close()


# ----------------------------------------------------------------------- end to end

N = 200
PER_BATCH = 50  # 4 capped batches: 3 retained and one before them
RETAINED = 3


@pytest.fixture(scope="module")
def jobs(env, broker, tmp_path_factory):
    """An in-process job manager (the process's Spark session) and an executor, with
    stream ``events`` over a 2-partition topic of N JSON records."""
    from streamjob.manager import JobManager

    topic = f"events_{uuid.uuid4().hex[:6]}"
    create_topic(broker.bootstrap, topic, 2)
    replay(broker.bootstrap, topic, [json.dumps({"id": i, "name": f"n{i}"}).encode()
                                     for i in range(N)], 2)
    manager = JobManager(env.catalog, env.home)
    ex = Executor(env.catalog, env.home, manager)
    ex.execute(parse_script(
        f'CREATE STREAM events (id INT, name STRING) TBLPROPERTIES("topic"="{topic}", '
        f'"kafka.broker.list"="{broker.bootstrap}", "format"="json");')[0])
    yield SimpleNamespace(manager=manager, ex=ex, topic=topic,
                          out=tmp_path_factory.mktemp("out"))
    # the jobs only: the process's Spark stays for the worker's next module, as the
    # modules' worlds leave it (manager.shutdown() would make that module start a JVM)
    manager.stop_all(graceful=True)


def _cli_checkpoints(env, name: str) -> list[dict]:
    """``streamjob checkpoints NAME --json``, run in-process (click's CliRunner): the
    command's output is the point here, not a process start."""
    from click.testing import CliRunner
    from streamjob.cli.app import main

    res = CliRunner().invoke(main, ["checkpoints", name, "--json"],
                             env={"STREAMJOB_HOME": str(env.home.root)})
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


@pytest.mark.spark
@pytest.mark.parametrize("which", BACKENDS)
def test_a_job_keeps_its_last_checkpoints_in_the_backend(which, env, jobs, zk_client):
    name = f"copy_{which}"
    for sql in parse_script(f"""
        CREATE TABLE out_{which} (id INT, name STRING)
          TBLPROPERTIES ("connector"="sql", "url"="sqlite:///{jobs.out / which}.db");
        CREATE STREAMJOB {name} AS ("insert into out_{which} select id, upper(name) from events")
          JOBPROPERTIES("morphling.checkpoint.backend"="{which}",
                        "morphling.job.max.records.per.batch"="{PER_BATCH}",
                        "morphling.checkpoint.retained"="{RETAINED}",
                        "morphling.job.checkpoint.interval"="0");
        START STREAMJOB {name};"""):
        jobs.ex.execute(sql)
    jobs.manager.wait_until_idle(timeout=300)
    job = env.catalog.get_job("default", name)
    running = f"{env.root}/default/jobs/default.{name}"
    if which == "zookeeper":
        assert json.loads(zk_client.get(running)[0])["uid"] == job.uid

    with backend_for_job(env.catalog, env.home, job) as b:
        assert b.name == which
        cps = b.list(job)
    ids = _ids(cps)
    assert len(ids) == RETAINED and ids == list(range(ids[0], ids[0] + RETAINED))
    assert ids[-1] >= N // PER_BATCH - 1  # at least one checkpoint per capped batch
    assert cps[-1].source_offsets == {jobs.topic: {"0": N // 2, "1": N // 2}}
    assert all(c.status == "COMPLETED" and c.input_rows <= PER_BATCH for c in cps)
    if which != "catalog":
        assert env.catalog.list_checkpoints(job.uid) == []
    ck = Path(env.home.checkpoint_dir("default", name)) / "commits"
    assert sorted(int(p.name) for p in ck.iterdir() if p.name.isdigit()) == ids

    shown = _cli_checkpoints(env, name)
    assert [c["checkpoint_id"] for c in shown] == ids
    assert shown[-1]["source_offsets"] == cps[-1].source_offsets

    run = lambda sql: jobs.ex.execute(parse_script(sql)[0]).message  # noqa: E731
    run(f"STOP STREAMJOB {name};")
    # a dry run (streamjob check) contacts no backend: it cannot check zookeeper/kafka ids
    dry = Executor(scratch_catalog(env.catalog), env.home, dry_run=True)
    if which == "catalog":
        with pytest.raises(JobError, match="is not retained"):
            dry.execute(parse_script(f"START STREAMJOB {name} FROM CHECKPOINT 99;")[0])
    else:
        assert "not checked" in dry.execute(
            parse_script(f"START STREAMJOB {name} FROM CHECKPOINT 99;")[0]).message

    # restore the oldest retained checkpoint: the backend drops the later records, the
    # job redoes those batches and records them again (the offset log keeps the entry
    # before the oldest checkpoint, which Spark reads to resume)
    assert f"checkpoints {ids[1]}, {ids[2]} removed" in run(
        f"START STREAMJOB {name} FROM CHECKPOINT {ids[0]};")
    jobs.manager.wait_until_idle(timeout=300)
    with backend_for_job(env.catalog, env.home, job) as b:
        redone = b.list(job)
    assert _ids(redone) == ids and redone[:1] == cps[:1]
    assert redone[-1].started_at > cps[-1].started_at
    # a restart with nothing new to read is idle at once (the backend's latest offsets)
    run(f"STOP STREAMJOB {name};")
    run(f"START STREAMJOB {name};")
    jobs.manager.wait_until_idle(timeout=120)
    with backend_for_job(env.catalog, env.home, job) as b:
        assert b.list(job) == redone

    jobs.ex.execute(parse_script(f"DROP STREAMJOB {name};")[0])
    assert env.catalog.get_job("default", name) is None
    assert not ck.parent.exists()
    if which == "catalog":
        assert env.catalog.list_checkpoints(job.uid) == []
    else:
        with open_backend(which, catalog=env.catalog, home=env.home, bootstrap=env.bootstrap) as b:
            assert b.list(job) == [] and b.purge(job) == 0
    if which == "zookeeper":
        zk_client.sync(running)
        assert zk_client.exists(running) is None
        assert zk_client.exists(f"{env.root}/default/checkpoints/default.{name}") is None
