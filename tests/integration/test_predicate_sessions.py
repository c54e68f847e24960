"""Slipstream's predicate sessions on real Spark and the real broker (in one process):
events out of order within the watermark delay, over two Kafka partitions, in several
micro-batches; the table must hold exactly the sessions a batch computation over the
same events gives (tests/integration/test_window_restarts.py has the same across a
SIGKILL). Waits are ``processAllAvailable()``; two sentinel events an hour later push
the watermark past every real session (their own rows are left out)."""

from __future__ import annotations

import json
import random
import uuid
from datetime import timedelta

import pytest
from kafka import KafkaProducer

from streamjob.connectors.files.table import read_table
from streamjob_tools.dev.broker import create_topic

from .test_window_restarts import SENTINEL, T0, USERS, login_sessions, seconds
from .world import SparkWorld

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture(scope="module")
def world(tmp_path_factory, broker):
    w = SparkWorld(tmp_path_factory.mktemp("psessions"))
    w.bootstrap = broker.bootstrap
    yield w
    w.close()


def produce(bootstrap: str, topic: str, evs) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for i, (user, op, s) in enumerate(evs):
        ts = (T0 + timedelta(seconds=s)).strftime("%Y-%m-%dT%H:%M:%SZ")
        if i >= len(evs) - 2:  # alone, the last of each partition: its end offset (TESTING.md)
            producer.flush()
        producer.send(topic, json.dumps({"user_id": user, "op": op, "ts": ts}).encode(),
                      partition=i % 2)
    producer.flush()
    producer.close()


def test_predicate_sessions_of_disordered_events_match_batch(world):
    topic = f"logins_{uuid.uuid4().hex[:6]}"
    assert create_topic(world.bootstrap, topic, 2)
    out = world.root / "out"
    world.run(f"""
    CREATE STREAM logins (user_id STRING, op STRING, ts TIMESTAMP)
    TBLPROPERTIES ("topic"="{topic}", "kafka.broker.list"="{world.bootstrap}", "format"="json",
      "transwarp.consumer.reset.offset.strategy"="earliest",
      "watermark.column"="ts", "watermark.delay"="4 seconds");
    CREATE TABLE sessions (user_id STRING, started TIMESTAMP, ended TIMESTAMP, n BIGINT)
    STORED AS PARQUET LOCATION '{out}';""")
    plan, query = world.start("logins_job", """insert into sessions
      select user_id, session_window.start, session_window.end, count(*) from logins
      SESSIONWINDOW(INIT[op = 'login'] END[op = 'logout'] KEYEDBY(user_id)) group by user_id""")
    assert plan.output_mode == "append"

    rng = random.Random(5)
    evs = [(rng.choice(USERS), rng.choices(("login", "view", "logout"), (2, 5, 2))[0], s)
           for s in range(240)]
    # sent out of order: each event moved by up to 3 s (the watermark delay is 4 s)
    sent = sorted(evs, key=lambda e: e[2] + rng.uniform(-1.5, 1.5))
    assert sent != evs

    def rows():
        return sorted((r["user_id"], seconds(r["started"]), seconds(r["ended"]), r["n"])
                      for r in read_table(str(out)).to_pylist() if r["user_id"] != SENTINEL)

    try:
        for part in (sent[:100], sent[100:]):
            produce(world.bootstrap, topic, part)
            query.processAllAvailable()
        for hours in (1, 2):
            produce(world.bootstrap, topic, [(SENTINEL, "login", 3600 * hours)])
            query.processAllAvailable()
        assert query.exception() is None
    finally:
        query.stop()
    expected = login_sessions(evs, exclude=False, timeout=None)
    assert len(expected) > 20
    assert rows() == expected
