"""Failover, checkpoint expiry and changed-logic refusal with real faults (DESIGN §4-§5).

Faults are injected for real, in the sink's database: a PostgreSQL row trigger raises
when the batch being written holds a chosen record, a chosen number of times (counted
by a sequence, which a rollback does not undo). The job must restart from its last
checkpoint with backoff, count failures afresh after a completed checkpoint, end FAILED
with the error in the catalog when a fault persists past ``morphling.task.max.failures``,
and still write every row exactly once.

Jobs run in this process through a :class:`JobManager` (the code path of ``streamjob
run``; the CLI's exit codes and its one-sentence errors are tested in tests/unit and
test_jvm_death), over a topic of every fourth flight (84,194 records). Only the refusal
of changed logic goes through the ``streamjob`` command, whose catalog flags are its point.
"""

from __future__ import annotations

import logging
import uuid

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from streamjob_tools.dev import flights as nyc
from streamjob_tools.dev.broker import create_topic
from streamjob.exceptions import JobError

from .conftest import Cli
from .test_kafka_source_jobs import World

pytestmark = pytest.mark.spark
#: Seconds this module takes on a fast host: make test hands the longest modules out first
#: (tests/conftest.py), so the run does not end on one of them while the other worker idles.
EXPECTED_S = 33

PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
SAMPLE = 4  # every SAMPLE-th flight: 84,194 records, months 1-12
COLUMNS = "year INT, month INT, day INT, carrier STRING, flight INT, dep_delay DOUBLE, arr_delay DOUBLE"

TRIGGER = """
CREATE SEQUENCE march_faults; CREATE SEQUENCE september_faults;
CREATE FUNCTION inject_fault() RETURNS trigger AS $$
BEGIN
  IF NEW.month = 3 AND nextval('march_faults') <= 2 THEN
    RAISE EXCEPTION 'injected fault: March (attempt %)', currval('march_faults');
  END IF;
  IF NEW.month = 9 AND nextval('september_faults') <= 2 THEN
    RAISE EXCEPTION 'injected fault: September (attempt %)', currval('september_faults');
  END IF;
  IF NEW.month = 12 AND {december} THEN
    RAISE EXCEPTION 'injected fault: December, every time';
  END IF;
  RETURN NEW;
END $$ LANGUAGE plpgsql;
CREATE TABLE late (year INT, month INT, day INT, carrier TEXT, flight INT,
                   dep_delay DOUBLE PRECISION, arr_delay DOUBLE PRECISION);
CREATE TRIGGER inject BEFORE INSERT ON late FOR EACH ROW EXECUTE FUNCTION inject_fault();
"""


@pytest.fixture(scope="module")
def world(tmp_path_factory, broker):
    w = World(tmp_path_factory.mktemp("failover"), broker.bootstrap)
    yield w
    w.close()


@pytest.fixture(scope="module")
def sample(world, flights_df):
    """Stream ``flights`` over a new 2-partition topic of every SAMPLE-th flight; returns
    ``(topic, the flights it holds as a DataFrame)``."""
    df = flights_df.iloc[::SAMPLE]
    topic = f"flights_sample_{uuid.uuid4().hex[:6]}"
    create_topic(world.bootstrap, topic, 2)
    nyc.replay(world.bootstrap, topic, nyc.flight_records(df), 2)
    world.run(f"""CREATE STREAM flights ({COLUMNS}) TBLPROPERTIES ("topic"="{topic}",
      "kafka.broker.list"="{world.bootstrap}", "format"="json");""")
    return topic, df


@pytest.fixture
def sink(request):
    """A fresh PostgreSQL schema holding the sink table with the fault trigger."""
    admin = create_engine(PG_URL)
    schema = f"sj_fail_{uuid.uuid4().hex[:10]}"
    december = getattr(request, "param", "false")
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        conn.execute(text(f'SET search_path TO "{schema}"'))
        conn.execute(text(TRIGGER.replace("{december}", december)))
    url = make_url(PG_URL).update_query_dict({"options": f"-csearch_path={schema}"})
    yield url.render_as_string(hide_password=False), schema, admin
    with admin.begin() as conn:
        conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
    admin.dispose()


def _late_job(world, job: str, url: str, max_failures: int, timeout_ms: int = 60000):
    """Table ``<job>_t`` on the sink's ``late`` and job ``job`` copying the late flights
    into it, 20,000 records per micro-batch (the topic holds the months in the order
    1, 10, 11, 12, 2, ..., 9: March is read by batch 1, September by batches 3-4, with
    batch 2 completed between them), every micro-batch a checkpoint; started."""
    world.run(f"""
CREATE TABLE {job}_t ({COLUMNS}) TBLPROPERTIES ("connector"="sql", "url"="{url}", "table"="late");
CREATE STREAMJOB {job} AS ("insert into {job}_t
  select year, month, day, carrier, flight, dep_delay, arr_delay from flights where arr_delay > 60")
JOBPROPERTIES ("morphling.job.checkpoint.interval"="0",
               "morphling.job.max.records.per.batch"="20000",
               "morphling.task.max.failures"="{max_failures}",
               "morphling.checkpoint.timeout"="{timeout_ms}",
               "streamjob.failover.initial.backoff"="100");  -- restarts at once: a test
""")
    return world.manager.start(world.catalog.require_job("default", job))


def _rows(admin, schema):
    with admin.connect() as conn:
        return conn.execute(text(
            f'SELECT year, month, day, carrier, flight, dep_delay, arr_delay FROM "{schema}".late'
        )).all()


def _expected(flights_df):
    late = flights_df[flights_df["arr_delay"] > 60]
    return sorted(tuple(r) for r in late[["year", "month", "day", "carrier", "flight",
                                          "dep_delay", "arr_delay"]].itertuples(index=False))


def _listed(world, job: str) -> dict:
    """The job's row of SHOW STREAMJOBS (``streamjob list --json``)."""
    return next(j for j in world.run("SHOW STREAMJOBS;")[0].to_json()
                if j["job"] == f"default.{job}")


def test_transient_faults_fail_over_and_every_row_lands_once(world, sample, sink, caplog):
    url, schema, admin = sink
    # two faults of two failures each, with checkpoints between them: max.failures=2 holds;
    # a 1 ms checkpoint timeout makes every checkpoint expire and complete late
    caplog.set_level(logging.WARNING, logger="streamjob")
    _late_job(world, "transient", url, max_failures=2, timeout_ms=1)
    world.manager.wait_until_idle(timeout=300)
    got = sorted(tuple(r) for r in _rows(admin, schema))
    want = _expected(sample[1])
    assert len(got) == len(want) and got == want, f"{len(got)} rows, expected {len(want)}"

    desc = world.describe("transient")
    runs = desc["runs"]
    causes = [r["cause"] or "" for r in runs if r["status"] == "FAILED"]
    assert len(causes) == 4, runs
    assert sum("injected fault: March" in c for c in causes) == 2
    assert sum("injected fault: September" in c for c in causes) == 2
    assert desc["failed_runs"] == 4 and desc["run_count"] >= 5 and len(runs) == desc["run_count"]
    # expiry: logged in Slipstream's words, counted, and the late ones recorded as LATE
    logged = caplog.text
    assert "expired before completing" in logged
    assert "Checkpoint[" in logged and "of job {default.transient}" in logged
    assert desc["expired_checkpoints"] >= 1
    assert "LATE" in {c["status"] for c in desc["checkpoints"]}
    world.manager.stop(world.catalog.require_job("default", "transient").uid)


@pytest.mark.parametrize("sink", ["true"], indirect=True)
def test_a_persistent_fault_ends_failed_with_the_error_kept(world, sample, sink):
    url, schema, admin = sink
    runner = _late_job(world, "persistent", url, max_failures=1)
    with pytest.raises(JobError, match="injected fault: December, every time"):
        world.manager.wait_until_idle(timeout=300)  # `streamjob run` exits 1 with it
    runner.join(60)
    world.manager.stop(runner.job.uid)  # forget it: later waits are for running jobs
    job = _listed(world, "persistent")
    assert job["status"] == "FAILED"
    assert "injected fault: December" in job["last_error"]
    assert job["attempts"] == 2  # the first failure and one restart


def test_changed_stateful_logic_is_refused_at_start(world, sample, tmp_path):
    """A catalog lost and rebuilt over the same checkpoint root: the job of the same name
    but another (stateful) query must not resume the old checkpoints."""
    world.run("""
CREATE TABLE late_parquet (carrier STRING, arr_delay DOUBLE) STORED AS PARQUET;
CREATE STREAMJOB j AS ("insert into late_parquet select carrier, arr_delay from flights where arr_delay > 300")
JOBPROPERTIES ("morphling.job.checkpoint.interval"="0", "morphling.job.max.records.per.batch"="100000");  -- one batch: one checkpoint""")
    world.run_job("j")
    world.manager.stop(world.catalog.require_job("default", "j").uid)
    topic = sample[0]
    second = tmp_path / "second.sql"
    second.write_text(f"""
CREATE STREAM flights (carrier STRING, month INT, arr_delay DOUBLE)
TBLPROPERTIES ("topic"="{topic}", "kafka.broker.list"="{world.bootstrap}", "format"="json");
CREATE TABLE counts (carrier STRING, n BIGINT)
TBLPROPERTIES ("connector"="sql", "url"="sqlite:///{tmp_path}/counts.db", "primary.key"="carrier");
CREATE STREAMJOB j AS ("insert into counts select carrier, count(*) from flights group by carrier");
START STREAMJOB j;""")
    cli = Cli(tmp_path / "home", world.bootstrap)
    other = ["--catalog", f"sqlite:///{tmp_path}/other-catalog.db",
             "--conf", f"spark.morphling.taskstate.checkpoint.directory={world.home.checkpoint_root}"]
    res = cli.run(*other, "submit", str(second))  # a new, empty catalog over the checkpoints
    assert res.returncode == 1 and "holds no streamjobs" in res.stderr  # issue 13 point 7
    other.append("--new-catalog")  # told to: the job's own checks still refuse to resume
    res = cli.run(*other, "submit", str(second))
    assert res.returncode == 1
    assert "cannot resume from its checkpoints: it now keeps state" in res.stderr
    assert "DROP STREAMJOB default.j" in res.stderr and "Traceback" not in res.stderr
    assert f"{second}:7:1" in res.stderr  # the START statement


def test_a_source_that_raises_at_a_chosen_batch_fails_over_then_fails(world):
    """A malformed record at a chosen offset makes the Kafka source raise in the batch
    that reads it, on every attempt: failover with backoff, then FAILED with the error
    naming topic, partition and offset (malformed records are never dropped silently)."""
    topic = f"faulty_{uuid.uuid4().hex[:8]}"
    create_topic(world.bootstrap, topic, 1)
    records = [b'{"id": %d, "v": 1.5}' % i for i in range(3000)]
    records[2100] = b'{"id": 2100, "v": '  # cut short: the fault, read by the third batch
    nyc.replay(world.bootstrap, topic, records, 1)
    world.run(f"""
CREATE STREAM faulty_s (id INT, v DOUBLE)
TBLPROPERTIES ("topic"="{topic}", "kafka.broker.list"="{world.bootstrap}", "format"="json");
CREATE TABLE faulty_t (id INT, v DOUBLE) STORED AS PARQUET;
CREATE STREAMJOB faulty AS ("insert into faulty_t select id, v from faulty_s")
JOBPROPERTIES ("morphling.job.checkpoint.interval"="0", "morphling.job.max.records.per.batch"="1000",
               "morphling.task.max.failures"="2", "streamjob.failover.initial.backoff"="100");""")
    runner = world.manager.start(world.catalog.require_job("default", "faulty"))
    with pytest.raises(JobError, match="offset 2100"):
        world.manager.wait_until_idle(timeout=300)
    runner.join(60)
    world.manager.stop(runner.job.uid)
    job = _listed(world, "faulty")
    assert job["status"] == "FAILED" and job["attempts"] == 3
    assert topic in job["last_error"] and "offset 2100" in job["last_error"], job["last_error"]
    assert job["last_checkpoint"] == 1  # batches 0 and 1 were committed before the fault
    desc = world.describe("faulty")
    failed = [r for r in desc["runs"] if r["status"] == "FAILED"]
    assert len(failed) == 3 and all("offset 2100" in r["cause"] for r in failed)
