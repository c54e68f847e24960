"""A job calling a user function across a SIGKILL (issue 31, "Tests"): ``streamjob run
FILE`` with a scalar Python function over a one-partition Kafka topic into an SQLite
table without a key (a replayed row would show twice) is SIGKILLed after a few
checkpoints; the rest of the records arrive; the same file runs again until idle. The
table holds every record once, with the function's value computed by pandas: nothing
lost, nothing doubled."""

from __future__ import annotations

import json
import signal

import pandas as pd
import pytest
import sqlalchemy as sa

from streamjob_tools.dev.broker import create_topic
from streamjob_tools.dev.flights import replay

from .conftest import Cli, kill_group, wait_for

pytestmark = [pytest.mark.system, pytest.mark.slow]  # two `streamjob run` processes

MODULE = '''
import pandas as pd


def label(name: pd.Series, x: pd.Series) -> pd.Series:
    return name.str.upper() + ":" + (x * 2).round(2).astype(str)
'''

SCRIPT = """
CREATE STREAM IF NOT EXISTS udf_k (id BIGINT, name STRING, x DOUBLE)
TBLPROPERTIES("topic"="udf_k", "kafka.broker.list"="${{BROKER}}", "format"="json");
CREATE TABLE IF NOT EXISTS udf_out (id BIGINT, label STRING)
TBLPROPERTIES("connector"="sql", "url"="sqlite:///{db}");
CREATE FUNCTION IF NOT EXISTS label AS 'restart_udfs:label' RETURNS STRING;
CREATE STREAMJOB IF NOT EXISTS udf_j AS ("insert into udf_out select id, label(name, x) from udf_k")
JOBPROPERTIES("morphling.job.checkpoint.interval"="0",
              "morphling.job.max.records.per.batch"="40");
START STREAMJOB udf_j;
"""

ROWS = [{"id": i, "name": f"n{i}", "x": i / 8} for i in range(600)]


def _encode(rows) -> list[bytes]:
    return [json.dumps(r).encode() for r in rows]


def test_sigkill_and_restart_of_a_job_with_a_udf_loses_and_doubles_nothing(tmp_path, broker):
    cli = Cli(tmp_path / "home", broker.bootstrap)
    (cli.home / "functions").mkdir(parents=True)
    (cli.home / "functions" / "restart_udfs.py").write_text(MODULE)
    db = tmp_path / "out.db"
    script = tmp_path / "udf.sql"
    script.write_text(SCRIPT.format(db=db))
    create_topic(broker.bootstrap, "udf_k", 1)
    replay(broker.bootstrap, "udf_k", _encode(ROWS[:400]))

    proc = cli.popen("run", str(script), BROKER=broker.bootstrap)
    try:
        def progressed():
            ids = list(cli.last_checkpoints().values())
            return ids and (ids[0] or -1) >= 2

        wait_for(progressed, 600, "3 checkpoints of the job with a UDF")
    finally:
        kill_group(proc, signal.SIGKILL)
    engine = sa.create_engine(f"sqlite:///{db}")
    with engine.connect() as conn:
        before = conn.execute(sa.text("select count(*) from udf_out")).scalar()
    assert 0 < before <= 400  # killed with input read; 200 more records follow the restart

    replay(broker.bootstrap, "udf_k", _encode(ROWS[400:]))
    res = cli.run("run", str(script), "--until-idle", BROKER=broker.bootstrap)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Traceback" not in res.stderr

    got = pd.read_sql("select id, label from udf_out order by id", engine)
    assert got["id"].is_unique, got[got["id"].duplicated()]  # nothing doubled
    frame = pd.DataFrame(ROWS)
    want = pd.DataFrame({"id": frame["id"],
                         "label": frame["name"].str.upper() + ":"
                         + (frame["x"] * 2).round(2).astype(str)})
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want, check_dtype=False)
