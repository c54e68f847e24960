"""Issue 13, point 13: with default properties, a Kafka broker and a sink database down
for 3 minutes and back leave every job RUNNING again, with nothing lost and nothing
doubled (counted against the input). On the main of 2026-11-23, 1-3 minutes of outage
ended jobs FAILED for good: five failures with backoff 1, 2, 4, 8, 16 s were spent in
about half a minute. Now failures count within morphling.task.failure.window (60 s,
Flink's failure-rate strategy) while the backoff grows to 30 s.

The faults are real (tests/integration/faults.py): the broker process is stopped with
SIGSTOP, the database refuses connections and loses its sessions."""

from __future__ import annotations

import json
import time
import uuid

import pytest
import sqlalchemy as sa

from streamjob_tools.dev import flights as nyc
from streamjob_tools.dev.broker import LocalBroker, create_topic
from streamjob.manager import JobManager

from .faults import broker_paused, database_down, scratch_database
from .world import World

pytestmark = [pytest.mark.spark, pytest.mark.slow]

OUTAGE_S = 180
#: Seconds this module takes on a fast host: it starts first (tests/conftest.py), and
#: its worker mostly waits meanwhile (Makefile: test-slow's third worker).
EXPECTED_S = 220


def ids_in(url: str, table: str) -> list[int]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return sorted(r[0] for r in conn.execute(sa.text(f"select id from {table}")))
    finally:
        engine.dispose()


def test_three_minutes_without_broker_and_database_then_running_exactly_once(tmp_path):
    broker = LocalBroker.start()
    world = World(tmp_path)
    manager = JobManager(world.catalog, world.home)
    topic = f"ids_{uuid.uuid4().hex[:6]}"
    files = tmp_path / "in"
    files.mkdir()
    try:
        with scratch_database() as pg_url:
            create_topic(broker.bootstrap, topic, 2)
            nyc.replay(broker.bootstrap, topic, [json.dumps({"id": i}).encode() for i in range(100)], 2)
            world.write(files, [{"id": i} for i in range(100)])
            world.run(f"""
            CREATE STREAM k (id BIGINT) TBLPROPERTIES ("topic"="{topic}", "kafka.broker.list"="{broker.bootstrap}", "format"="json");
            CREATE STREAM f (id BIGINT) TBLPROPERTIES ("source"="files", "path"="{files}", "format"="json");
            CREATE TABLE from_kafka (id BIGINT) TBLPROPERTIES ("connector"="sql", "url"="sqlite:///{tmp_path}/k.db");
            CREATE TABLE from_files (id BIGINT) TBLPROPERTIES ("connector"="sql", "url"="{pg_url}");
            CREATE STREAMJOB kj AS ("insert into from_kafka select id from k");
            CREATE STREAMJOB fj AS ("insert into from_files select id from f");
            """)  # default properties: exactly-once, max.failures 5, 10 s interval
            for name in ("kj", "fj"):
                manager.start(world.catalog.require_job("default", name))
            manager.wait_until_idle(timeout=300)

            with broker_paused(broker), database_down(pg_url):
                world.write(files, [{"id": i} for i in range(100, 200)])  # must wait for the database
                deadline = time.monotonic() + OUTAGE_S
                failed_over = set()
                while time.monotonic() < deadline:  # the outage's length is the scenario
                    for name in ("kj", "fj"):
                        job = world.catalog.require_job("default", name)
                        assert job.status != "FAILED", (name, job.last_error)
                        if job.status == "RECOVERING" or job.attempts:
                            failed_over.add(name)
                    time.sleep(1)
                assert failed_over == {"kj", "fj"}  # both faults were felt

            nyc.replay(broker.bootstrap, topic, [json.dumps({"id": i}).encode() for i in range(100, 200)], 2)
            manager.wait_until_idle(timeout=600)
            for name in ("kj", "fj"):
                assert world.catalog.require_job("default", name).status == "RUNNING"
            assert ids_in(f"sqlite:///{tmp_path}/k.db", "from_kafka") == list(range(200))
            assert ids_in(pg_url, "from_files") == list(range(200))
            for uid in list(manager.runners):
                manager.stop(uid)
    finally:
        for uid in list(manager.runners):
            manager.stop(uid)
        world.close()
        broker.stop()
