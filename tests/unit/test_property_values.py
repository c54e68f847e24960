"""Issue 28 point 5: property values are range- and type-checked in the registry, a key
given twice is an error at the second one, and contradictory job properties are refused
at their line. Through the parser and the executor (real SQLite catalog), each at the
position a user sees; each failed on the main of 2026-11-27 (0761648) unless it says so."""

from __future__ import annotations

import pytest

from streamjob import properties as jp
from streamjob.catalog import Catalog
from streamjob.exceptions import ParseError, PropertyError, StreamJobError
from streamjob.executor import Executor
from streamjob.grammar import parse_script
from streamjob.home import Home

pytestmark = pytest.mark.unit

SETUP = """
CREATE STREAM s (k STRING, v DOUBLE) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="127.0.0.1:1");
CREATE TABLE totals (k STRING, total DOUBLE) STORED AS PARQUET;
"""


def run(ex: Executor, script: str):
    results = [ex.execute(stmt) for stmt in parse_script(script)]
    return results[-1] if results else None


@pytest.fixture
def ex(tmp_path):
    executor = Executor(Catalog(f"sqlite:///{tmp_path}/catalog.db"), Home.open(tmp_path / "home"))
    run(executor, SETUP)
    return executor


def refused(ex, script: str) -> StreamJobError:
    with pytest.raises(StreamJobError) as info:
        run(ex, script)
    assert info.value.line is not None, info.value
    return info.value


def job(props: str) -> str:
    return f'CREATE STREAMJOB j AS ("insert into totals select k, v from s")\nJOBPROPERTIES ({props})'


# --------------------------------------------------------------------------- ranges


@pytest.mark.parametrize("name, value, words", [
    ("morphling.job.checkpoint.interval", "99999999999999999999999", "between 0 ms and 7 days"),
    ("morphling.checkpoint.timeout", "8 days", "between 1 ms and 7 days"),
    ("streamjob.trigger.interval", "1000000 hours", "between 0 ms and 7 days"),
    ("morphling.maxlag.on.disorder", "31 days", "between 0 ms and 30 days"),
    ("morphling.task.max.failures", "10001", "between 0 and 10000"),
    ("morphling.job.max.records.per.batch", "9999999999", "between 0 and 2147483647"),
    ("mapred.reduce.tasks", "1000000", "between 1 and 100000"),
])
def test_numbers_are_bounded_and_the_error_names_the_bound(ex, name, value, words):
    err = refused(ex, job(f'"{name}"="{value}"'))
    assert isinstance(err, PropertyError)
    assert f"property '{name}' must be" in err.message and words in err.message
    assert (err.line, err.column) == (2, len(f'JOBPROPERTIES ("{name}"=') + 1)


def test_a_watermark_delay_is_bounded(ex):
    err = refused(ex, 'CREATE STREAM w (a INT, ts TIMESTAMP) TBLPROPERTIES ("topic"="t",\n'
                      '"kafka.broker.list"="h:1", "watermark.column"="ts",\n'
                      '"watermark.delay"="99999999999999999999999 seconds")')
    assert "of at most 30 days" in err.message and (err.line, err.column) == (3, 19)


@pytest.mark.parametrize("value", ["yes", "1", "on", "t", "truee"])
def test_booleans_are_strict(ex, value):
    """(Already strict on main; kept as the rule's test.)"""
    err = refused(ex, job(f'"morphling.result.auto.flush"="{value}"'))
    assert "must be true or false" in err.message


@pytest.mark.parametrize("brokers, words", [
    ("h:99999", "the port of 'h:99999' must be between 1 and 65535"),
    ("h:0", "the port of 'h:0' must be between 1 and 65535"),
    ("h", "'h' is not host:port"),
    ("a:9092,,b:9092", "'' is not host:port"),
    ("bad host:9092", "is not a host name or address"),
])
def test_broker_lists_are_host_port_with_a_real_port(ex, brokers, words):
    err = refused(ex, f'CREATE STREAM k (a INT) TBLPROPERTIES ("topic"="t",\n  "kafka.broker.list"="{brokers}")')
    assert words in err.message and (err.line, err.column) == (2, 23)


def test_a_zookeeper_quorum_port_is_checked_in_the_engine_properties(tmp_path):
    with pytest.raises(PropertyError, match="the port of 'zk:99999' must be between 1 and 65535"):
        Home.open(tmp_path / "home", {"spark.morphling.zookeeper.quorum": "zk:99999"})
    Home.open(tmp_path / "ok", {"spark.morphling.zookeeper.quorum": "zk:2181,zk2:2181/chroot"})


@pytest.mark.parametrize("url, words", [
    ("foo+bar://app:s3cret@db:5432/x",
     "unknown SQLAlchemy dialect or driver 'foo+bar'; did you mean '"),
    ("postgres://app@db/x", "unknown SQLAlchemy dialect or driver 'postgres'; did you mean 'postgresql+"),
    ("mysql+mysqldb://app@db/x", "its driver module is not installed"),
    ("postgresql://app:s3cret@db:99999/x", "must be between 1 and 65535, got '99999'"),
    ("jdbc:postgresql://db/x", "not an SQLAlchemy URL"),
])
def test_sql_urls_need_an_installed_driver_and_a_real_port(ex, url, words):
    err = refused(ex, 'CREATE TABLE q (k STRING) TBLPROPERTIES ("connector"="sql",\n'
                      f'  "url"="{url}")')
    assert words in err.message, err.message
    assert "s3cret" not in err.message  # the password stays masked
    assert (err.line, err.column) == (2, 9)


def test_a_sql_url_with_secret_references_is_checked_without_resolving_them(ex):
    run(ex, 'CREATE TABLE q (k STRING) TBLPROPERTIES ("connector"="sql",\n'
            '  "url"="postgresql://app:${env:STREAMJOB_SECRET_NOT_SET_ANYWHERE}@db:5432/x")')


# ----------------------------------------------------------------------- duplicates


@pytest.mark.parametrize("text, at", [
    ('CREATE STREAM d (a INT) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:1",\n'
     '  "Topic"="u")', (2, 3)),
    (job('"morphling.checkpoint.retained"="5",\n  "MORPHLING.CHECKPOINT.RETAINED"="50"'), (3, 3)),
    ('CREATE STREAMJOB j AS ("insert into totals select k, v from s");\n'
     'ALTER STREAMJOB j SET JOBPROPERTIES ("streamjob.trigger.interval"="1 s",\n'
     '  "streamjob.trigger.interval"="2 s")', (3, 3)),
])
def test_a_key_given_twice_is_an_error_at_the_second(ex, text, at):
    with pytest.raises(ParseError, match=r"is given twice \(first at line \d+, column \d+\)") as info:
        run(ex, text)
    assert (info.value.line, info.value.column) == at


# -------------------------------------------------------------------- contradictions


@pytest.mark.parametrize("props, at, words", [
    ('"morphling.job.enable.checkpoint"="false",\n  "morphling.checkpoint.backend"="zookeeper"',
     (3, 3), "morphling.job.enable.checkpoint=false (from JOBPROPERTIES) with "
             "morphling.checkpoint.backend=zookeeper (from JOBPROPERTIES)"),
    ('"morphling.checkpoint.backend"="kafka",\n  "morphling.job.enable.checkpoint"="false"',
     (3, 3), "a job without durable checkpoints records none"),
    ('"streamsql.use.eventmode"="true", "streamjob.trigger.interval"="1 s"',
     (2, 50), "event mode runs micro-batches back to back"),
    ('"morphling.task.max.failures"="-1", "morphling.job.enable.auto.failover"="true"',
     (2, 52), "-1 means never restart"),
    ('"streamjob.failover.initial.backoff"="1 min"', (2, 16),
     "streamjob.failover.initial.backoff=60000 (from JOBPROPERTIES) with "
     "streamjob.failover.max.backoff=30000 (from default)"),
])
def test_contradictions_are_refused_at_the_later_key(ex, props, at, words):
    err = refused(ex, job(props))
    assert isinstance(err, PropertyError) and "contradictory job properties" in err.message
    assert words in err.message and (err.line, err.column) == at
    assert ex.catalog.get_job("default", "j") is None


def test_a_contradiction_with_a_session_default_is_located_at_the_jobs_key(ex):
    run(ex, "SET morphling.checkpoint.backend=zookeeper")
    err = refused(ex, job('"morphling.job.enable.checkpoint"="false"'))
    assert "morphling.checkpoint.backend=zookeeper (from SET)" in err.message
    assert (err.line, err.column) == (2, 16)


def test_alter_into_a_contradiction_is_refused_and_changes_nothing(ex):
    run(ex, job('"morphling.job.enable.checkpoint"="false"'))
    err = refused(ex, 'ALTER STREAMJOB j SET JOBPROPERTIES\n  ("morphling.checkpoint.backend"="zookeeper")')
    assert "contradictory job properties" in err.message and (err.line, err.column) == (2, 4)
    assert "morphling.checkpoint.backend" not in ex.catalog.get_job("default", "j").properties


def test_what_is_not_a_contradiction_passes(ex):
    """Defaults never contradict: -1 alone, event mode alone, a backoff within the
    longest; and each contradiction is documented by the registry."""
    run(ex, job('"morphling.task.max.failures"="-1", "streamsql.use.eventmode"="true",\n'
                '  "streamjob.failover.initial.backoff"="10 s"'))
    assert len(jp.JOB.contradictions) >= 4
    from streamjob.properties.__main__ import render

    doc = render()
    assert all(c.rule in doc and c.why in doc for c in jp.JOB.contradictions)


@pytest.mark.parametrize("props, at, words", [
    ('"topic"="t", "kafka.broker.list"="h:1",\n  "watermark.column"="ts"', (2, 3),
     '"watermark.column" and "watermark.delay" go together'),
    ('"topic"="t", "kafka.broker.list"="h:1",\n  "kafka.sasl.username"="u"', (2, 3),
     '"kafka.sasl.username" would be ignored under "kafka.security.protocol"="PLAINTEXT"'),
    ('"topic"="t", "kafka.broker.list"="h:1",\n  "kafka.security.protocol"="SASL_SSL"', (2, 29),
     'needs "kafka.sasl.mechanism"'),
    ('"topic"="t", "kafka.broker.list"="h:1",\n  "malformed.policy"="dead-letter"', (2, 3),
     '"malformed.policy"="dead-letter" and "malformed.dead.letter.table" go together'),
])
def test_connector_contradictions_are_located_at_their_key(ex, props, at, words):
    """Contradictory TBLPROPERTIES were refused at the statement's name (line 1)."""
    err = refused(ex, f"CREATE STREAM c (a INT, ts TIMESTAMP) TBLPROPERTIES ({props})")
    assert words in err.message and (err.line, err.column) == at, err.message
