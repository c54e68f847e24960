"""What ``streamjob status`` (the API's ``/v1/status``, ``/metrics``: one
``status_snapshot``) shows while a restarted Kafka job catches up a backlog (issue 16):
until the new run reports, its rates are unknown (null), never the previous run's; its
lag is the records the broker holds that the job has not committed, at once, and it
falls to 0 as the job catches up.

The job runs in this process through a :class:`JobManager` (``streamjob run``'s code
path) with the session's Spark and broker. Its sink is a PostgreSQL table the test holds
a SHARE lock on while the job restarts: the run's first batch cannot commit, so the
moment "restarted, nothing reported yet" lasts as long as the test looks at it, without
a sleep."""

from __future__ import annotations

import json
import re
import uuid

import pytest
import sqlalchemy as sa
from kafka import KafkaProducer

from streamjob.api.metrics import metrics_text
from streamjob_tools.dev.broker import create_topic
from streamjob.manager import JobManager
from streamjob.manager.liveness import HostRegistration
from streamjob.status import status_snapshot

from .conftest import wait_for
from .world import World

pytestmark = pytest.mark.spark

PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
FIRST, BACKLOG, CAP = 200, 3000, 700  # records before the stop, after it; per batch


def _produce(bootstrap: str, topic: str, ids: range) -> None:
    """Records ``{"id": i}`` over 2 partitions, every one visible to offset-range readers:
    each partition's last record goes alone and flushed (TESTING.md, Tansu's end offset)."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    ids = list(ids)
    head, tail = ids[:-2], ids[-2:]
    for i in head:
        producer.send(topic, json.dumps({"id": i}).encode(), partition=i % 2)
    producer.flush()
    for i in tail:
        producer.send(topic, json.dumps({"id": i}).encode(), partition=i % 2)
        producer.flush()
    producer.close()


@pytest.fixture
def world(tmp_path, broker):
    w = World(tmp_path)
    host = HostRegistration(w.catalog, "local[2]")  # a live job manager, as `streamjob run`
    w.manager = JobManager(w.catalog, w.home, owner=host.server_id)
    w.bootstrap = broker.bootstrap
    schema = f"sj_lag_{uuid.uuid4().hex[:10]}"
    w.pg = sa.create_engine(PG_URL)
    with w.pg.begin() as conn:
        conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    w.schema = schema
    yield w
    w.manager.stop_all(graceful=False)
    host.close()
    w.close()
    with w.pg.begin() as conn:
        conn.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
    w.pg.dispose()


def _row(world) -> dict:
    return next(j for j in status_snapshot(world.catalog)["jobs"] if j["job"] == "default.lag_job")


def _metric(text: str, name: str) -> float | None:
    m = re.search(rf'^{name}{{job="default.lag_job"}} (\S+)$', text, re.M)
    return None if m is None else float(m.group(1))


def test_a_restarted_job_shows_its_backlog_as_lag_and_no_stale_rate(world):
    topic = f"lag_{uuid.uuid4().hex[:6]}"
    create_topic(world.bootstrap, topic, 2)
    _produce(world.bootstrap, topic, range(FIRST))
    url = f"{PG_URL}?options=-csearch_path%3D{world.schema}"
    world.run(f"""CREATE STREAM lag_ev (id INT)
      TBLPROPERTIES("topic"="{topic}", "kafka.broker.list"="{world.bootstrap}", "format"="json");
    CREATE TABLE lag_out (id INT) TBLPROPERTIES("connector"="sql", "url"="{url}", "table"="lag_out");
    CREATE STREAMJOB lag_job AS ("insert into lag_out select id from lag_ev")
      JOBPROPERTIES("morphling.job.checkpoint.interval"="0",
                    "morphling.job.max.records.per.batch"="{CAP}");""")
    job = world.catalog.require_job("default", "lag_job")
    # the first run: caught up, its rates measured
    world.manager.start(job)
    world.manager.wait_until_idle(timeout=180)
    first = wait_for(lambda: (lambda p: p if p.get("processed_rows_per_s") is not None
                              and p.get("lag_records") == 0 else None)(
        world.catalog.require_job("default", "lag_job").progress), 30, "the first run's progress")
    world.manager.stop(job.uid)
    assert _row(world)["processed_rows_per_s"] is None  # a stopped job has no rate now

    _produce(world.bootstrap, topic, range(FIRST, FIRST + BACKLOG))  # while it is stopped
    with world.pg.connect() as lock:
        lock.execute(sa.text(f'LOCK TABLE "{world.schema}".lag_out IN SHARE MODE'))  # inserts wait
        world.manager.start(job)
        # the restarted run knows its backlog at once, and nothing else yet
        def restarted():
            r = _row(world)
            return r if r["status"] == "RUNNING" and r["lag_records"] is not None else None

        row = wait_for(restarted, 60, "the restarted run's lag")
        assert row["lag_records"] == BACKLOG
        assert row["input_rows_per_s"] is None and row["processed_rows_per_s"] is None
        assert row["batch"] == first["batch_id"]  # the latest checkpoint, the previous run's
        text = metrics_text(world.catalog)[0].decode()
        assert _metric(text, "streamjob_job_lag_records") == BACKLOG
        assert _metric(text, "streamjob_job_processed_rows_per_second") is None
        lock.rollback()  # the first batch commits now
    # it catches up batch by batch (CAP records each): the lag never grows, ends at 0
    seen = []

    def caught_up():
        r = _row(world)
        if r["lag_records"] is not None:
            if not seen or seen[-1] != r["lag_records"]:
                seen.append(r["lag_records"])
        return r if r["lag_records"] == 0 and r["processed_rows_per_s"] is not None else None

    row = wait_for(caught_up, 180, "the restarted job to catch up", interval=0.1)
    assert seen[0] == BACKLOG and seen[-1] == 0 and seen == sorted(seen, reverse=True), seen
    progress = world.catalog.require_job("default", "lag_job").progress
    assert progress["batch_id"] > first["batch_id"]  # the rates are the new run's batches'
    with world.pg.connect() as conn:
        assert conn.execute(sa.text(f'select count(*) from "{world.schema}".lag_out')).scalar() == FIRST + BACKLOG
