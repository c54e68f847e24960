"""The JSON shapes of docs/json.md are what the code prints (issue 16): each documented
example has exactly the keys, in order, that ``--json`` and the HTTP API emit for a job,
its checkpoints and runs, a stream, a table and the status, read from a real SQLite
catalog (no Spark)."""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path

import pytest

from streamjob import shapes
from streamjob.catalog import Catalog
from streamjob.executor import Executor
from streamjob.grammar import parse_script
from streamjob.home import Home
from streamjob.status import status_snapshot

pytestmark = pytest.mark.unit

DOC = Path(__file__).resolve().parents[2] / "docs" / "json.md"

SETUP = """
CREATE STREAM orders (id BIGINT, region STRING, amount DOUBLE)
  TBLPROPERTIES ("topic"="orders", "kafka.broker.list"="kafka1:9092", "format"="json");
CREATE TABLE totals (region STRING, amount DOUBLE) TBLPROPERTIES ("connector"="sql",
  "url"="postgresql://app:s3cret@db/shop", "table"="totals", "primary.key"="region");
CREATE STREAMJOB totals_job AS
  ("insert into totals select region, sum(amount) from orders group by region");
"""


def documented() -> dict[str, dict]:
    """``{shape name: its example}`` of every ``<!-- shape: NAME -->`` json block."""
    found = re.findall(r"<!-- shape: ([a-z-]+) -->\s*```json\n(.*?)\n```", DOC.read_text(), re.S)
    return {name: json.loads(text) for name, text in found}


@pytest.fixture(scope="module")
def emitted(tmp_path_factory):
    """What the code prints for each shape, from a job with a checkpoint and a run."""
    root = tmp_path_factory.mktemp("shapes")
    catalog = Catalog(f"sqlite:///{root}/catalog.db")
    ex = Executor(catalog, Home.open(root / "home"))
    run = lambda sql: [ex.execute(s) for s in parse_script(sql)][-1].to_json()  # noqa: E731
    run(SETUP)
    job = catalog.get_job("default", "totals_job")
    now = datetime.now(timezone.utc)
    catalog.record_checkpoint(job.uid, 41, started_at=now, ended_at=now, duration_ms=830,
                              source_offsets={"orders": {"0": 52000, "1": 51890}}, input_rows=1200,
                              retained=5)
    catalog.add_savepoint(job.uid, "before_upgrade", epoch="9f1c2a7b3e40", checkpoint_id=41,
                          fingerprint=None, source_offsets={"orders": {"0": 52000}},
                          location=str(root / "sp"), taken_at=now, owner="token:ops")
    catalog.start_run(job.uid, 1)
    catalog.add_missing_columns(job.uid, {"default.orders": ["regoin"]})
    status = status_snapshot(catalog)
    import pyarrow as pa
    from deltalake import write_deltalake

    run(f"CREATE TABLE events (id BIGINT) STORED AS DELTA LOCATION '{root}/events';")
    for i in range(2):
        write_deltalake(f"{root}/events", pa.table({"id": [i]}), mode="append")
    optimized = run("OPTIMIZE TABLE events")
    return {"status": status, "job": status["jobs"][0], "list": run("SHOW STREAMJOBS")[0],
            "job-detail": run("DESCRIBE STREAMJOB totals_job"),
            "checkpoint": run("SHOW CHECKPOINTS FOR STREAMJOB totals_job")[0],
            "stream": run("DESCRIBE STREAM orders"), "table": run("DESCRIBE TABLE totals"),
            "explain": run("EXPLAIN totals_job"), "savepoint": run("SHOW SAVEPOINTS")[0],
            "optimize": optimized, "vacuum": run("VACUUM TABLE events RETAIN 0 HOURS DRY RUN")}


def test_every_shape_is_documented_with_the_keys_the_code_emits(emitted):
    docs = documented()
    assert set(docs) == {"status", "job", "job-detail", "checkpoint", "run", "stream", "table",
                         "explain", "savepoint", "optimize", "vacuum"}
    detail = emitted["job-detail"]
    emitted_keys = {
        "status": list(emitted["status"]), "job": list(emitted["job"]),
        "job-detail": list(detail), "checkpoint": list(emitted["checkpoint"]),
        "run": list(detail["runs"][0]), "stream": list(emitted["stream"]),
        "table": list(emitted["table"]), "explain": list(emitted["explain"]),
        "savepoint": list(emitted["savepoint"]),
        "optimize": list(emitted["optimize"]), "vacuum": list(emitted["vacuum"]),
    }
    constants = {
        "status": shapes.STATUS_KEYS, "job": shapes.JOB_KEYS,
        "job-detail": shapes.JOB_KEYS + shapes.JOB_DETAIL_KEYS,
        "checkpoint": shapes.CHECKPOINT_KEYS, "run": shapes.RUN_KEYS,
        "stream": shapes.STREAM_KEYS, "table": shapes.TABLE_KEYS,
        "explain": shapes.EXPLAIN_KEYS, "savepoint": shapes.SAVEPOINT_KEYS,
        "optimize": shapes.OPTIMIZE_KEYS, "vacuum": shapes.VACUUM_KEYS,
    }
    for name, example in docs.items():
        assert list(example) == emitted_keys[name] == list(constants[name]), name
    # list --json prints the job of status --json; describe's detail starts with it
    assert list(emitted["list"]) == emitted_keys["job"] == emitted_keys["job-detail"][:len(shapes.JOB_KEYS)]
    assert list(detail["checkpoints"][0]) == emitted_keys["checkpoint"]


def test_nested_items_of_the_examples_have_the_emitted_keys(emitted):
    docs, detail = documented(), emitted["job-detail"]
    for key in ("properties", "dependencies", "malformed_records"):
        assert list(docs["job-detail"][key][0]) == list(detail[key][0]), key
    for shape in ("stream", "table"):
        for key in ("columns", "properties"):
            assert list(docs[shape][key][0]) == list(emitted[shape][key][0]), (shape, key)
    assert docs["job-detail"]["missing_columns"][0].keys() == detail["missing_columns"][0].keys()
    assert list(docs["job-detail"]["versions"][0]) == list(detail["versions"][0]) \
        == list(shapes.VERSION_KEYS)
    explained = emitted["explain"]
    assert list(docs["explain"]["sources"][0]) == list(explained["sources"][0]) \
        == list(shapes.EXPLAIN_SOURCE_KEYS)
    assert list(docs["explain"]["state"][0]) == list(explained["state"][0]) \
        == list(shapes.EXPLAIN_STATE_KEYS)
    assert list(docs["explain"]["sink"]) == list(explained["sink"])
    assert list(docs["vacuum"]["files"][0]) == list(emitted["vacuum"]["files"][0])
    # the documented example is what the code says of this job, to the offsets
    assert docs["explain"]["sources"][0] == explained["sources"][0]


def test_every_key_is_snake_case_and_secrets_stay_masked(emitted):
    def keys(value):
        if isinstance(value, dict):
            for k, v in value.items():
                if k not in ("source_offsets", "starting_offsets"):  # topics, partitions
                    yield k
                    yield from keys(v)
        elif isinstance(value, list):
            for v in value:
                yield from keys(v)

    for name, value in emitted.items():
        bad = [k for k in keys(value) if not re.fullmatch(r"[a-z][a-z0-9_]*", k)]
        assert bad == [], (name, bad)
    assert "s3cret" not in json.dumps(emitted["table"]) + json.dumps(emitted["job-detail"]) \
        + json.dumps(emitted["explain"])


def test_the_status_server_object_follows_the_rules(tmp_path):
    """The job manager in ``status --json`` (``.server``) keeps json.md's rules: its times
    are ISO-8601 to the second like every other time (the guide's walk printed
    ``"started_at": "2026-11-25 15:11:20.756950+00:00"``), and its keys are the documented
    ones."""
    import os
    import socket

    catalog = Catalog(f"sqlite:///{tmp_path}/catalog.db")
    host, pid = socket.gethostname(), os.getpid()  # a live process on this host
    catalog.register_server(f"{host}:{pid}:0badcafe", host, pid, "local[*]")
    assert catalog.acquire_lease(f"{host}:{pid}:0badcafe", 10_000)
    server = json.loads(json.dumps(status_snapshot(catalog), default=str))["server"]
    assert server["label"] == f"{host}:{pid}" and server["pid"] == pid
    iso = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00"
    assert re.fullmatch(iso, server["started_at"]), server
    assert re.fullmatch(iso, server["heartbeat_at"]), server
    keys = re.search(r"`server`: the job manager holding the catalog's lease,\s*`\{(.*?)\}`",
                     DOC.read_text(), re.S).group(1)
    assert re.findall(r'"([a-z_]+)"', keys) == list(server)
