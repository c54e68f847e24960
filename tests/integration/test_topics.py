"""SHOW TOPICS and PRINT (issue 16) against the real broker (Tansu, TESTING.md), without
Spark: through a client session, the command line (-e) and the HTTP API."""

from __future__ import annotations

import threading
import uuid

import httpx
import pytest
from click.testing import CliRunner

from streamjob.api import create_app
from streamjob.api.auth import new_token
from streamjob.api.serve import HttpService
from streamjob.catalog import Catalog
from streamjob.cli import main
from streamjob_tools.dev.broker import create_topic
from streamjob.exceptions import ObjectNotFoundError, ValidationError
from streamjob.home import Home
from streamjob.client.session import ClientSession

pytestmark = pytest.mark.component


def produce(bootstrap: str, topic: str, records: list[tuple[int, bytes | None, bytes]]) -> None:
    """Send ``(partition, key, value)`` records, each flushed alone (Tansu's end offset
    counts only a batch's first record, TESTING.md)."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=1)
    try:
        for partition, key, value in records:
            producer.send(topic, value, key=key, partition=partition)
            producer.flush()
    finally:
        producer.close()


@pytest.fixture
def topic(broker):
    name = f"print_{uuid.uuid4().hex[:10]}"
    assert create_topic(broker.bootstrap, name, 2)
    produce(broker.bootstrap, name, [(0, b"k1", b'{"id": 1}'), (1, None, b'{"id": 2}'),
                                     (0, b"k3", b'{"id": 3}')])
    return name


@pytest.fixture
def session(tmp_path, broker, topic):
    home = Home.open(str(tmp_path / "home"))
    s = ClientSession(Catalog(f"sqlite:///{tmp_path}/catalog.db"), home)
    s.execute_script(f"""CREATE STREAM s (id BIGINT) TBLPROPERTIES ('topic'='{topic}',
        'kafka.broker.list'='{broker.bootstrap}', 'format'='json')""").__next__()
    yield s
    s.catalog.close()


def _one(session, sql: str):
    [(_, result)] = list(session.execute_script(sql))
    return result


def test_show_topics_lists_the_brokers_of_the_declared_kafka_streams(session, broker, topic):
    rows = _one(session, "SHOW TOPICS").rows
    assert (broker.bootstrap, topic, 2, "default.s") in rows
    assert all(not t.startswith("__") for _, t, _, _ in rows)
    assert _one(session, "SHOW TOPICS FROM s").rows == rows
    assert (broker.bootstrap, topic, 2, "default.s") in _one(
        session, f"SHOW TOPICS FROM '{broker.bootstrap}'").rows


def test_print_from_beginning_shows_offset_partition_timestamp_key_value(session):
    records = list(_one(session, "PRINT s FROM BEGINNING LIMIT 3").records)
    assert sorted((r["partition"], r["offset"], r["key"], r["value"]) for r in records) == [
        (0, 0, "k1", '{"id": 1}'), (0, 1, "k3", '{"id": 3}'), (1, 0, None, '{"id": 2}')]
    assert all(r["timestamp"].endswith("Z") for r in records)


def test_print_without_from_beginning_shows_only_new_records(session, broker, topic):
    result = _one(session, f"PRINT '{topic}' LIMIT 2")  # positions fixed at the end now
    sender = threading.Thread(target=produce, args=(broker.bootstrap, topic, [
        (1, b"n1", b"new 1"), (0, b"n2", b"new 2")]))
    sender.start()
    try:
        records = list(result.records)
    finally:
        sender.join()
    assert sorted(r["value"] for r in records) == ["new 1", "new 2"]


def test_print_of_a_missing_topic_suggests_the_nearest(session, topic):
    with pytest.raises(ObjectNotFoundError, match=f"topic {topic}x does not exist .*did you mean {topic}"):
        _one(session, f"PRINT {topic}x LIMIT 1")
    with pytest.raises(ValidationError, match="names its own broker"):
        _one(session, "PRINT s FROM '127.0.0.1:1' LIMIT 1")


def test_print_and_use_through_the_command_line_and_the_http_api(session, tmp_path, broker, topic):
    url = f"sqlite:///{tmp_path}/catalog.db"
    out = CliRunner().invoke(main, ["--home", str(tmp_path / "home"), "--catalog", url, "-e",
                                    "CREATE DATABASE d; USE d; PRINT default.s FROM BEGINNING LIMIT 1"])
    assert out.exit_code == 0, out.output
    [line] = [x for x in out.stdout.splitlines() if x.startswith("offset: ")]
    assert "partition: " in line and "timestamp: " in line and "value: {\"id\": " in line

    token = new_token()
    session.catalog.create_token("topics", "operator", token)
    service = HttpService(create_app(session.catalog, session.home), "127.0.0.1:0")
    base = service.start()
    try:
        with httpx.Client(base_url=base, timeout=30,
                          headers={"Authorization": f"Bearer {token}"}) as http:
            r = http.post("/v1/statements", json={"sql": "USE d; SHOW CREATE STREAM default.s"})
            assert r.status_code == 200, r.text
            assert r.json()["database"] == "d"
            assert r.json()["results"][1]["text"].startswith("CREATE STREAM default.s (")
            r = http.post("/v1/statements", json={"sql": "PRINT s FROM BEGINNING LIMIT 2",
                                                  "database": "default"})
            assert r.status_code == 200, r.text
            assert len(r.json()["results"][0]["records"]) == 2
            r = http.post("/v1/statements", json={"sql": "PRINT s"})
            assert r.status_code == 400 and "needs LIMIT" in r.json()["error"]["message"]
    finally:
        service.stop()
