"""Jobs writing a Delta table and an Iceberg table SIGKILLed midway and resumed: the real
flights through the real broker and Spark, via the ``streamjob`` command, both jobs in
the same two processes (the Iceberg job costs no JVM of its own), each table read back
with its format's reader (delta-rs, pyiceberg) and compared with pandas over the same
input: 0 lost, 0 duplicated; the Delta log's app transactions and the Iceberg snapshot
summaries (``streamjob.app-id``, ``streamjob.batch-id``) show each batch committed once;
then VACUUM leaves the Iceberg table only the files it reads.
Apart from test_delta_sink.py so that the slow tier runs it beside the other long
modules."""

from __future__ import annotations

import json
import signal

import pytest
from deltalake import DeltaTable

from .conftest import kill_group, wait_for
from .results import LATE_COLS, compare

pytestmark = pytest.mark.system

SCRIPT = """
CREATE STREAM IF NOT EXISTS flights (
  year INT, month INT, day INT, dep_time INT, dep_delay DOUBLE, arr_time INT,
  arr_delay DOUBLE, carrier STRING, flight INT, tailnum STRING, origin STRING, dest STRING,
  air_time DOUBLE, distance DOUBLE)
TBLPROPERTIES("topic"="flights", "kafka.broker.list"="${FLIGHTS_BROKER}", "format"="json");

CREATE TABLE IF NOT EXISTS late_delta (
  year INT, month INT, day INT, carrier STRING, flight INT,
  origin STRING, dest STRING, dep_delay DOUBLE, arr_delay DOUBLE)
PARTITIONED BY (carrier)
STORED AS DELTA LOCATION '${STREAMJOB_HOME}/warehouse/default/late_delta';

CREATE STREAMJOB IF NOT EXISTS late_delta_job AS ("
  insert into late_delta
  select year, month, day, carrier, flight, origin, dest, dep_delay, arr_delay
  from flights where arr_delay > 60")
JOBPROPERTIES("morphling.job.checkpoint.interval"="0",
              "morphling.job.max.records.per.batch"="20000");

CREATE TABLE IF NOT EXISTS late_iceberg (
  year INT, month INT, day INT, carrier STRING, flight INT,
  origin STRING, dest STRING, dep_delay DOUBLE, arr_delay DOUBLE)
STORED AS ICEBERG;

CREATE STREAMJOB IF NOT EXISTS late_iceberg_job AS ("
  insert into late_iceberg
  select year, month, day, carrier, flight, origin, dest, dep_delay, arr_delay
  from flights where arr_delay > 60")
JOBPROPERTIES("morphling.job.checkpoint.interval"="0",
              "morphling.job.max.records.per.batch"="20000");

START STREAMJOB late_delta_job;
START STREAMJOB late_iceberg_job;
"""


def iceberg_table(home):
    """The pyiceberg table ``default.late_iceberg`` of the home's own SQL catalog."""
    from pyiceberg.catalog.sql import SqlCatalog

    return SqlCatalog("streamjob", uri=f"sqlite:///{home}/catalog.db").load_table(
        ("default", "late_iceberg"))


def snapshot_batches(tbl) -> list[tuple[str, int]]:
    """``(app id, batch id)`` of every snapshot of the table, oldest first."""
    from streamjob.connectors.iceberg.sink import APP_ID, BATCH_ID

    out = []
    for snap in sorted(tbl.snapshots(), key=lambda s: s.sequence_number):
        props = snap.summary.additional_properties
        out.append((props[APP_ID], int(props[BATCH_ID])))
    return out


def app_transactions(location) -> list[tuple[str, int]]:
    """Every app transaction of the table's log, in commit order: ``(app id, version)``."""
    out = []
    for commit in sorted((location / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "txn" in action:
                out.append((action["txn"]["appId"], action["txn"]["version"]))
    return out


@pytest.mark.slow  # about 1-2 min: two `streamjob run` processes with their JVMs
def test_lakehouse_jobs_killed_midway_resume_with_every_row_once(cli, expected, tmp_path):
    script = tmp_path / "late_delta.sql"
    script.write_text(SCRIPT)
    location = cli.home / "warehouse" / "default" / "late_delta"
    proc = cli.popen("run", str(script))
    try:
        def progressed():
            res = cli.run("list", "--json")
            jobs = json.loads(res.stdout) if res.returncode == 0 else []
            return len(jobs) == 2 and all((j["last_checkpoint"] or -1) >= 2 for j in jobs)

        wait_for(progressed, 300, "3 checkpoints of the Delta and the Iceberg job")
    finally:
        kill_group(proc, signal.SIGKILL)
    partial = DeltaTable(str(location)).to_pandas()
    assert 0 < len(partial) < len(expected["late_flights"]), "the crash should come midway"
    partial = iceberg_table(cli.home).scan().to_pandas()
    assert 0 < len(partial) < len(expected["late_flights"]), "the crash should come midway"

    res = cli.run("run", str(script), "--until-idle")
    assert res.returncode == 0, res.stdout + res.stderr
    got = DeltaTable(str(location)).to_pandas()
    diff = compare(got, expected["late_flights"], LATE_COLS)
    assert diff.exact, str(diff)
    txns = app_transactions(location)
    apps = {app for app, _ in txns}
    assert len(apps) == 1  # one job, one checkpoint epoch: one app id (uid:epoch)
    versions = [v for _, v in txns]
    assert versions == sorted(set(versions)), "a batch id committed twice"
    assert DeltaTable(str(location)).transaction_version(apps.pop()) == versions[-1]
    tbl = iceberg_table(cli.home)
    diff = compare(tbl.scan().to_pandas(), expected["late_flights"], LATE_COLS)
    assert diff.exact, str(diff)
    batches = snapshot_batches(tbl)
    assert len({app for app, _ in batches}) == 1  # one job, one epoch: one app id
    ids = [b for _, b in batches]
    assert ids == sorted(set(ids)), "a batch id committed twice"
    # VACUUM (no job runs now): the snapshots but the current one expire, and every file
    # left under data/ is one the table reads (a file the kill left uncommitted is gone)
    from streamjob.connectors.iceberg import maintenance as im
    from streamjob.connectors.iceberg.spec import IcebergTableRef

    where = cli.home / "warehouse" / "default" / "late_iceberg"
    ref = IcebergTableRef(f"sqlite:///{cli.home}/catalog.db", "default", "late_iceberg",
                          str(where))
    im.vacuum(ref, 0, dry_run=False)
    tbl = iceberg_table(cli.home)
    assert len(tbl.snapshots()) == 1
    live = {t.file.file_path.removeprefix("file://") for t in tbl.scan().plan_files()}
    assert {str(p) for p in (where / "data").rglob("*.parquet")} == live
    assert compare(tbl.scan().to_pandas(), expected["late_flights"], LATE_COLS).exact
