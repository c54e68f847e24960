"""User functions on real Spark and the real broker (issue 31, docs/functions.md): a
scalar Python function, registered by CREATE FUNCTION from the home's functions/
directory, runs vectorised in a job over Kafka into SQLite, and its results equal
pandas'; a function that raises fails the job, after one retry that fails the same way on
the same input, with an error naming it, the exception's type and message, the first
failing row's argument, that row's record (topic, partition, offset), the batch's Kafka
offsets, and no trace."""

from __future__ import annotations

import json
import logging
import uuid

import pandas as pd
import pytest
import sqlalchemy as sa

from streamjob.catalog import Catalog
from streamjob_tools.dev.broker import create_topic
from streamjob_tools.dev.flights import replay
from streamjob.exceptions import JobError
from streamjob.executor import Executor
from streamjob.grammar import parse_script
from streamjob.home import Home
from streamjob.manager.job_manager import JobManager

pytestmark = pytest.mark.spark

MODULE = '''
import pandas as pd


def label(name: pd.Series, x: pd.Series) -> pd.Series:
    return name.str.upper() + ":" + (x * 2).round(2).astype(str)


def picky(x: pd.Series) -> pd.Series:
    if (x > 100).any():
        raise ValueError(f"x too large: {x.max()}")
    return x
'''

ROWS = [{"id": i, "name": f"n{i}", "x": i / 4} for i in range(300)]


@pytest.fixture
def world(tmp_path, broker):
    home = Home.open(tmp_path / "home", {"spark.master": "local[2]",
                                         "spark.sql.shuffle.partitions": "2"})
    (tmp_path / "home" / "functions").mkdir()
    (tmp_path / "home" / "functions" / "shop_udfs.py").write_text(MODULE)
    catalog = Catalog(home.catalog_url)
    manager = JobManager(catalog, home)
    ex = Executor(catalog, home, manager, {"morphling.job.checkpoint.interval": "0"})
    yield ex, broker
    for uid in list(manager.runners):
        manager.stop(uid)
    catalog.close()


def _script(ex, broker, tmp_path, fn: str, extra: str = "",
            partitions: int = 2) -> tuple[str, str]:
    topic = f"udf_{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, partitions)
    replay(broker.bootstrap, topic, [json.dumps(r).encode() for r in ROWS], partitions)
    db = tmp_path / "out.db"
    script = f"""
    CREATE STREAM items (id BIGINT, name STRING, x DOUBLE)
      TBLPROPERTIES ("topic"="{topic}", "kafka.broker.list"="{broker.bootstrap}", "format"="json");
    CREATE TABLE labels (id BIGINT, label STRING)
      TBLPROPERTIES ("connector"="sql", "url"="sqlite:///{db}", "primary.key"="id");
    CREATE FUNCTION label AS 'shop_udfs:label' RETURNS STRING;
    CREATE FUNCTION picky AS 'shop_udfs:picky' RETURNS DOUBLE;
    CREATE STREAMJOB j AS ("insert into labels select id, {fn} from items") {extra};
    START STREAMJOB j;"""
    for stmt in parse_script(script):
        ex.execute(stmt)
    return topic, f"sqlite:///{db}"


def test_a_scalar_udf_over_kafka_into_sqlite_equals_pandas(world, tmp_path):
    ex, broker = world
    _, url = _script(ex, broker, tmp_path, "label(name, x)")
    ex.manager.wait_until_idle(timeout=240)
    got = pd.read_sql("select id, label from labels order by id", sa.create_engine(url))
    frame = pd.DataFrame(ROWS)
    want = pd.DataFrame({"id": frame["id"],
                         "label": frame["name"].str.upper() + ":" + (frame["x"] * 2).round(2).astype(str)})
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want, check_dtype=False)
    desc = dict(ex.execute(parse_script("DESCRIBE FUNCTION label")[0]).rows)
    assert desc["jobs"] == "default.j"


def test_a_raising_udf_fails_the_job_naming_function_error_row_and_kafka_input(world, tmp_path,
                                                                               caplog):
    """Default failover: the first failure is retried; the second, the same on the same
    input, ends the job FAILED at once (two runs, not max.failures + 1), and the error
    names the function, the exception, the first failing row's argument, its record's
    exact offset (the hidden position arguments the planner passes over a Kafka source)
    and the batch's Kafka offsets, with no trace (one partition: the batch's input is
    known exactly)."""
    ex, broker = world
    topic, _ = _script(ex, broker, tmp_path, "cast(picky(x * 10) as string)",
                       'JOBPROPERTIES ("streamjob.failover.initial.backoff"="500")',
                       partitions=1)
    with caplog.at_level(logging.WARNING, logger="streamjob.manager.runner"), \
            pytest.raises(JobError):
        ex.manager.wait_until_idle(timeout=240)
    job = ex.catalog.get_job("default", "j")
    assert job.status == "FAILED"
    error = job.last_error
    assert error.startswith("[streamjob:repeated-function-error] function picky raised "
                            "ValueError: x too large: "), error
    # x = i / 4 for ids 0..299: the first row over 100 after * 10 is id 41 (x * 10 = 102.5)
    assert "first failing row: picky(x=102.5)" in error, error
    # one partition, replayed in id order: the record of id 41 is at offset 41
    assert f"; failing record: topic {topic} partition 0 offset 41; " in error, error
    assert f"input topic {topic} partition 0 offsets " in error, error
    assert "[0, 300)" in error or "up to 300" in error, error
    assert "a restart cannot fix this: the function failed the same way" in error
    assert "Traceback" not in error and "File " not in error and "\tat " not in error
    runs = ex.catalog.list_runs(job.uid)
    assert len(runs) == 2 and all(r.status == "FAILED" for r in runs), runs
    assert "repeated" not in runs[0].cause and "function picky raised" in runs[0].cause
    logged = [r.getMessage() for r in caplog.records if r.name == "streamjob.manager.runner"]
    assert any(m.startswith("job default.j failed: function picky raised ValueError")
               and "Traceback" not in m for m in logged), logged  # the server's log
    shown = ex.execute(parse_script("SHOW STREAMJOBS")[0])
    row = dict(zip(shown.columns, shown.rows[0]))
    assert row["last error"] == error and row["status"] == "FAILED"


def test_an_edited_udf_is_refused_at_start_and_the_restored_one_resumes(world, tmp_path):
    from streamjob.exceptions import ChangedLogic

    ex, broker = world
    topic, url = _script(ex, broker, tmp_path, "label(name, x)")
    ex.manager.wait_until_idle(timeout=240)
    ex.execute(parse_script("STOP STREAMJOB j")[0])
    module = tmp_path / "home" / "functions" / "shop_udfs.py"
    module.write_text(MODULE.replace('":"', '"="'))
    with pytest.raises(ChangedLogic, match="function default.label changed since CREATE FUNCTION"):
        ex.execute(parse_script("START STREAMJOB j")[0])
    module.write_text(MODULE)
    more = [{"id": i, "name": f"n{i}", "x": i / 4} for i in range(300, 400)]
    replay(broker.bootstrap, topic, [json.dumps(r).encode() for r in more], 2)
    ex.execute(parse_script("START STREAMJOB j")[0])
    ex.manager.wait_until_idle(timeout=240)
    got = pd.read_sql("select id, label from labels order by id", sa.create_engine(url))
    assert list(got["id"]) == list(range(400))  # resumed from its checkpoint: all, once
    assert got["label"].iloc[-1] == "N399:" + str(round(399 / 4 * 2, 2))
