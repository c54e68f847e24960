"""Issue 13 point 10, the Kafka part: Kafka streams and tables take SSL and SASL settings,
passed to every kafka-python client they make, and their secrets never reach output, the
catalog or an error. On the main of 2026-11-23 every client took a bootstrap address only.

The broker of TESTING.md speaks neither TLS nor SASL. For TLS, a second broker advertises
the address of a TLS-terminating proxy in front of it (:mod:`.tls_proxy`), so every
connection a client makes after bootstrap goes through TLS; a job then reads, commits its
consumer group, records checkpoints in the kafka backend and writes a Kafka table through
it. SASL cannot be shown to succeed here; it is shown to be attempted (the plaintext
broker refuses the handshake) with the password kept out of everything."""

from __future__ import annotations

import json
import uuid

import pytest
import sqlalchemy as sa

from streamjob_tools.dev.broker import LocalBroker, free_port

from .test_kafka_source_jobs import World
from .tls_proxy import TlsProxy

pytestmark = pytest.mark.spark

N = 40


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    """``(bootstrap through TLS, CA file, proxy)``: a broker behind a TLS proxy."""
    import trustme

    root = tmp_path_factory.mktemp("tls")
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    ca_pem, cert_pem, key_pem = root / "ca.pem", root / "cert.pem", root / "key.pem"
    ca.cert_pem.write_to_path(str(ca_pem))
    cert.cert_chain_pems[0].write_to_path(str(cert_pem))
    cert.private_key_pem.write_to_path(str(key_pem))
    port = free_port()
    proxy = TlsProxy(("127.0.0.1", port), str(cert_pem), str(key_pem))
    broker = LocalBroker.start(port, advertised=f"127.0.0.1:{proxy.port}")
    yield f"127.0.0.1:{proxy.port}", str(ca_pem), proxy
    proxy.close()
    broker.stop()


@pytest.fixture(scope="module")
def world(tmp_path_factory, broker):
    w = World(tmp_path_factory.mktemp("kafka_security"), broker.bootstrap)
    yield w
    w.close()


def _ssl(ca: str) -> dict:
    return {"security_protocol": "SSL", "ssl_cafile": ca}


def _topic(bootstrap: str, ca: str, records: list[dict] | None = None) -> str:
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    name = f"sec_{uuid.uuid4().hex[:6]}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, **_ssl(ca))
    admin.create_topics([NewTopic(name, 1, 1)])
    admin.close()
    if records:
        producer = KafkaProducer(bootstrap_servers=bootstrap, **_ssl(ca))
        for i, r in enumerate(records):
            producer.send(name, json.dumps(r).encode(), partition=0)
            if i >= len(records) - 2:  # each of the last two alone (TESTING.md end offsets)
                producer.flush()
        producer.close()
    return name


def _props(bootstrap: str, topic: str, extra: str) -> str:
    return f'"topic"="{topic}", "kafka.broker.list"="{bootstrap}", "format"="json"{extra}'


def test_a_job_reads_commits_checkpoints_and_writes_through_tls(world, tls):
    bootstrap, ca, proxy = tls
    records = [{"id": i, "amount": i / 2} for i in range(N)]
    src, out = _topic(bootstrap, ca, records), _topic(bootstrap, ca)
    ssl_props = f', "kafka.security.protocol"="SSL", "kafka.ssl.ca.location"="{ca}"'
    url = f"sqlite:///{world.root / 'tls.db'}"
    before = proxy.handshakes
    world.run(f"""
    CREATE STREAM tls_in (id INT, amount DOUBLE)
      TBLPROPERTIES({_props(bootstrap, src, ssl_props)},
                    "transwarp.consumer.group.id"="tls_group");
    CREATE TABLE tls_rows (id INT, amount DOUBLE)
      TBLPROPERTIES("connector"="sql", "url"="{url}", "table"="tls_rows");
    CREATE TABLE tls_out (id INT, amount DOUBLE) TBLPROPERTIES({_props(bootstrap, out, ssl_props)});
    CREATE STREAMJOB tls_job AS ("insert into tls_rows select id, amount from tls_in")
      JOBPROPERTIES("morphling.job.checkpoint.interval"="0",
                    "morphling.checkpoint.backend"="kafka");
    CREATE STREAMJOB tls_copy AS ("insert into tls_out select id, amount from tls_in")
      JOBPROPERTIES("morphling.job.checkpoint.interval"="0");
    """)
    world.manager.start(world.catalog.require_job("default", "tls_copy"))
    world.run_job("tls_job")  # --until-idle's end offsets are read through TLS too
    with sa.create_engine(url).connect() as conn:
        got = sorted(conn.execute(sa.text("select id, amount from tls_rows")).all())
    assert got == [(r["id"], r["amount"]) for r in records]
    assert proxy.handshakes > before

    from streamjob.connectors.kafka.group import committed_offsets

    assert committed_offsets(bootstrap, "tls_group", src, [0],
                             security=_ssl(ca)) == {0: N}  # the group commit went through TLS
    job = world.catalog.require_job("default", "tls_job")
    from streamjob.checkpoint.backends import backend_for_job

    with backend_for_job(world.catalog, world.home, job) as backend:  # the kafka backend, via TLS
        assert backend.latest(job) is not None

    from kafka import KafkaConsumer

    consumer = KafkaConsumer(out, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             consumer_timeout_ms=20_000, isolation_level="read_committed",
                             **_ssl(ca))
    copied = []
    for msg in consumer:
        copied.append(json.loads(msg.value))
        if len(copied) == N:
            break
    consumer.close()
    assert sorted(r["id"] for r in copied) == list(range(N))
    world.stop_all()  # while the TLS broker is there: a stop waits for the current batch


def test_a_broker_certificate_that_is_not_trusted_fails_the_job_naming_the_broker(world, tls):
    bootstrap, ca, _ = tls
    src = _topic(bootstrap, ca, [{"id": 1, "amount": 1.0}, {"id": 2, "amount": 2.0}])
    world.run(f"""
    CREATE STREAM untrusted (id INT, amount DOUBLE)
      TBLPROPERTIES({_props(bootstrap, src, ', "kafka.security.protocol"="SSL", '
                                             '"kafka.request.timeout.ms"="1000"')});
    CREATE TABLE untrusted_rows (id INT, amount DOUBLE)
      TBLPROPERTIES("connector"="sql", "url"="sqlite:///{world.root / 'u.db'}", "table"="u");
    CREATE STREAMJOB untrusted_job AS ("insert into untrusted_rows select id, amount from untrusted")
      JOBPROPERTIES("morphling.task.max.failures"="0");
    """)
    runner = world.manager.start(world.catalog.require_job("default", "untrusted_job"))
    runner.join(180)
    world.manager.stop(runner.job.uid)
    job = world.catalog.require_job("default", "untrusted_job")
    assert job.status == "FAILED"
    assert bootstrap in job.last_error and "Traceback" not in job.last_error
    assert "certificate verify failed" in job.last_error  # streamjob's own TLS handshake says why


def test_sasl_is_attempted_and_its_password_stays_out_of_everything(world, monkeypatch):
    secret = "s3cr3t-" + uuid.uuid4().hex[:8]
    monkeypatch.setenv("STREAMJOB_SECRET_TEST_SASL", secret)
    sasl = (', "kafka.security.protocol"="SASL_PLAINTEXT", "kafka.sasl.mechanism"="SCRAM-SHA-256", '
            '"kafka.sasl.username"="etl", "kafka.sasl.password"="${env:STREAMJOB_SECRET_TEST_SASL}", '
            '"kafka.request.timeout.ms"="1000"')  # fails after 1 s of connecting, not 10
    world.run(f"""
    CREATE STREAM sasl_in (id INT, amount DOUBLE)
      TBLPROPERTIES({_props(world.bootstrap, "sasl_topic", sasl)});
    CREATE TABLE sasl_rows (id INT, amount DOUBLE)
      TBLPROPERTIES("connector"="sql", "url"="sqlite:///{world.root / 's.db'}", "table"="s");
    CREATE STREAMJOB sasl_job AS ("insert into sasl_rows select id, amount from sasl_in")
      JOBPROPERTIES("morphling.task.max.failures"="0");
    """)
    stored = world.catalog.get_stream("default", "sasl_in").properties
    assert stored["kafka.sasl.password"] == "${env:STREAMJOB_SECRET_TEST_SASL}"  # the reference only
    runner = world.manager.start(world.catalog.require_job("default", "sasl_job"))
    runner.join(180)
    world.manager.stop(runner.job.uid)
    job = world.catalog.require_job("default", "sasl_job")
    assert job.status == "FAILED" and world.bootstrap in job.last_error
    assert "SASL SCRAM-SHA-256 handshake as user 'etl'" in job.last_error
    described = json.dumps(world.run("DESCRIBE STREAM sasl_in;")[0].to_json())
    runs = json.dumps([r.cause for r in world.catalog.list_runs(job.uid)])
    for text in (job.last_error, described, runs, (world.home.root / "catalog.db").read_bytes().decode("latin-1")):
        assert secret not in text
    assert "STREAMJOB_SECRET_TEST_SASL" not in described  # masked wholesale, reference too
