"""Windows and sessions across a SIGKILL (issue 18, "Done when"): a real ``streamjob run``
process over one Kafka stream runs three jobs (gap sessions, a window stream read by a
job, and Slipstream's predicate sessions), is SIGKILLed after each job committed
checkpoints with windows and sessions still open in its state, and is run again on the
same script. The tables must then hold exactly what pandas/Python compute in batch over
the same events: no window or session lost or written twice.

Events are one per second of event time (the watermark delay is 2 s) for five users; a
last "sentinel" event an hour later pushes the watermark past every real window and
session, whose rows are then compared (the sentinel's own are left out). The waits are
on the catalog (committed checkpoints) and on the tables' committed rows."""

from __future__ import annotations

import json
import random
import signal
from datetime import datetime, timedelta, timezone

import pandas as pd
import pytest
from kafka import KafkaProducer

from streamjob.connectors.files.table import read_table
from streamjob_tools.dev.broker import create_topic

from .conftest import Cli, kill_group, wait_for

pytestmark = [pytest.mark.system, pytest.mark.slow]

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
USERS = ("ann", "bob", "cid", "dan", "eve")
SENTINEL = "__sentinel"
GAP, LENGTH, TIMEOUT = 5, 10, 15  # seconds
JOBS = ("gap_job", "windows_job", "logins_job")

SCRIPT = """
CREATE STREAM IF NOT EXISTS clicks (user_id STRING, op STRING, ts TIMESTAMP)
TBLPROPERTIES ("topic"="{topic}", "kafka.broker.list"="{bootstrap}", "format"="json",
  "transwarp.consumer.reset.offset.strategy"="earliest",
  "watermark.column"="ts", "watermark.delay"="2 seconds");
CREATE STREAM IF NOT EXISTS clicks_10s AS SELECT user_id, count(*) AS n, window AS win
  FROM clicks STREAMWINDOW sw AS (LENGTH '{length}' SECOND) GROUP BY user_id;
CREATE TABLE IF NOT EXISTS gap_sessions (user_id STRING, started TIMESTAMP, ended TIMESTAMP,
  n BIGINT) STORED AS PARQUET;
CREATE TABLE IF NOT EXISTS windows (user_id STRING, started TIMESTAMP, n BIGINT)
  STORED AS PARQUET;
CREATE TABLE IF NOT EXISTS logins (user_id STRING, started TIMESTAMP, ended TIMESTAMP,
  n BIGINT) STORED AS PARQUET;
CREATE STREAMJOB IF NOT EXISTS gap_job AS ("insert into gap_sessions
  select user_id, session_window.start, session_window.end, count(*)
  from clicks SESSIONWINDOW w AS (GAP '{gap}' SECOND) group by user_id") {props};
CREATE STREAMJOB IF NOT EXISTS windows_job AS ("insert into windows
  select user_id, win.start, n from clicks_10s") {props};
CREATE STREAMJOB IF NOT EXISTS logins_job AS ("insert into logins
  select user_id, session_window.start, session_window.end, count(*)
  from clicks SESSIONWINDOW(INIT[op='login'] END[op='logout' EXCLUDE] KEYEDBY(user_id)
                            TIMEOUT '{timeout}' SECOND)
  group by user_id") {props};
START STREAMJOB gap_job;
START STREAMJOB windows_job;
START STREAMJOB logins_job;
"""
PROPS = ('JOBPROPERTIES("morphling.job.checkpoint.interval"="0", '
         '"morphling.job.max.records.per.batch"="60")')


def events(n: int = 360) -> list[tuple[str, str, int]]:
    """``(user, op, second)``: one event per second, users and ops drawn at random."""
    rng = random.Random(18)
    return [(rng.choice(USERS), rng.choices(("login", "view", "logout"), (2, 5, 2))[0], s)
            for s in range(n)]


def produce(bootstrap: str, topic: str, evs) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for i, (user, op, s) in enumerate(evs):
        ts = (T0 + timedelta(seconds=s)).strftime("%Y-%m-%dT%H:%M:%SZ")
        if i == len(evs) - 1:  # alone: the broker's end offset (TESTING.md)
            producer.flush()
        producer.send(topic, json.dumps({"user_id": user, "op": op, "ts": ts}).encode(),
                      partition=0)
    producer.flush()
    producer.close()


# ------------------------------------------------------------------ batch results


def gap_sessions(evs) -> list:
    df = pd.DataFrame(evs, columns=["user_id", "op", "t"]).sort_values(["user_id", "t"])
    # Spark merges an event exactly one gap after the last into the session
    df["sid"] = df.groupby("user_id")["t"].diff().gt(GAP).groupby(df["user_id"]).cumsum()
    g = df.groupby(["user_id", "sid"])["t"].agg(["min", "max", "count"]).reset_index()
    return sorted((r.user_id, int(r["min"]), int(r["max"]) + GAP, int(r["count"]))
                  for _, r in g.iterrows())


def windows(evs) -> list:
    df = pd.DataFrame(evs, columns=["user_id", "op", "t"])
    df["start"] = df["t"] // LENGTH * LENGTH
    n = df.groupby(["user_id", "start"]).size().reset_index(name="n")
    return sorted((r.user_id, int(r.start), int(r.n)) for r in n.itertuples())


def login_sessions(evs, exclude: bool = True, timeout: int | None = TIMEOUT) -> list:
    """INIT op=login, END op=logout [EXCLUDE], [TIMEOUT]: the rules of docs/streamsql.md
    written out again, per user in time order: ``(user, start, end, events)``."""
    out = []
    for user in sorted({e[0] for e in evs}):
        session = None  # [start, last, count]
        for _, op, t in sorted((e for e in evs if e[0] == user), key=lambda e: e[2]):
            if session and timeout is not None and t > session[1] + timeout:
                out.append((user, session[0], session[1] + timeout, session[2]))
                session = None
            if session is None:
                if op == "login":
                    session = [t, t, 1]
            elif op == "logout":
                out.append((user, session[0], t, session[2] + (0 if exclude else 1)))
                session = None
            else:
                session[1], session[2] = t, session[2] + 1
        if session and timeout is not None:
            out.append((user, session[0], session[1] + timeout, session[2]))
    return sorted(out)


def seconds(value) -> int:
    return int(value.timestamp() - T0.timestamp())


def table_rows(home, table: str) -> list:
    location = home / "warehouse" / "default" / table
    if not (location / "_spark_metadata").is_dir():
        return []
    rows = []
    for r in read_table(str(location)).to_pylist():
        if r["user_id"] == SENTINEL:
            continue
        if "ended" in r:
            rows.append((r["user_id"], seconds(r["started"]), seconds(r["ended"]), r["n"]))
        else:
            rows.append((r["user_id"], seconds(r["started"]), r["n"]))
    return sorted(rows)


# ------------------------------------------------------------------ the test


def alive(proc) -> None:
    """Fail with the process's output if ``streamjob run`` has exited."""
    if proc.poll() is not None:
        pytest.fail(f"streamjob run exited ({proc.returncode}):\n{proc.stdout.read()}")


def test_sessions_and_window_streams_match_batch_after_a_sigkill(tmp_path, broker):
    cli = Cli(tmp_path / "home", broker.bootstrap)
    topic = f"restarts_{tmp_path.name[-12:]}".replace("-", "_")
    assert create_topic(broker.bootstrap, topic, 1)
    script = tmp_path / "windows.sql"
    script.write_text(SCRIPT.format(topic=topic, bootstrap=broker.bootstrap, length=LENGTH,
                                    gap=GAP, timeout=TIMEOUT, props=PROPS))
    evs = events()
    half = len(evs) // 2
    expected = {"gap_sessions": gap_sessions(evs), "windows": windows(evs),
                "logins": login_sessions(evs)}
    assert all(len(v) > 10 for v in expected.values()), expected

    produce(broker.bootstrap, topic, evs[:half])
    proc = cli.popen("run", str(script))
    try:
        def committed():
            alive(proc)
            ids = cli.last_checkpoints()
            return len(ids) == 3 and all((i or -1) >= 1 for i in ids.values())

        wait_for(committed, 400, "2 committed checkpoints of each job")
    finally:
        kill_group(proc, signal.SIGKILL)
    # mid-stream: what the first half closed at most, and the second half not yet read
    before = {t: table_rows(cli.home, t) for t in expected}
    for table, rows in before.items():
        assert len(rows) < len(expected[table]), table
    killed = {j["job"]: j["last_checkpoint"] for j in cli.json("list")}

    produce(broker.bootstrap, topic, evs[half:] + [(SENTINEL, "view", 3600)])
    proc = cli.popen("run", str(script))
    try:
        def complete():
            alive(proc)
            return all(len(table_rows(cli.home, t)) >= len(rows) for t, rows in expected.items())

        wait_for(complete, 900, "every window and session of the events")
        ids = {j["job"]: j["last_checkpoint"] for j in cli.json("list")}
    finally:
        kill_group(proc, signal.SIGKILL)
    for table, rows in expected.items():
        assert table_rows(cli.home, table) == rows, table
    # the second run went on from the first run's checkpoints
    assert set(ids) == {f"default.{j}" for j in JOBS}
    assert all(ids[j] > killed[j] >= 1 for j in ids), (killed, ids)
