"""Issue 15: alert rules per job (``streamjob.alert.*`` job properties), evaluated on the
status snapshot of a real SQLite catalog and POSTed to a real HTTP receiver on
127.0.0.1. Time-based rules get explicit ``now`` values; every wait is on a condition
with a timeout."""

from __future__ import annotations

import base64
import json
import logging
import os
import socket
import threading
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from streamjob import properties as jp
from streamjob.alerts import AlertEvaluator, AlertService, WebhookSender, fingerprint
from streamjob.catalog import Catalog
from streamjob.exceptions import PropertyError
from streamjob.status import status_snapshot

pytestmark = pytest.mark.unit

T0 = datetime(2026, 5, 1, 12, 0, 0, tzinfo=timezone.utc)
WAIT_S = 10


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


class Receiver:
    """A webhook receiver: records every POST (path, Authorization header, JSON body)
    and answers with the next of ``statuses`` (then 200)."""

    def __init__(self, statuses=()):
        self.requests: list[dict] = []
        self.statuses = list(statuses)
        self.cv = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with receiver.cv:
                    status = receiver.statuses.pop(0) if receiver.statuses else 200
                    receiver.requests.append({"path": self.path,
                                              "auth": self.headers.get("Authorization"),
                                              "body": json.loads(body), "answer": status})
                    receiver.cv.notify_all()
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,),
                                       daemon=True)
        self.thread.start()

    def url(self, userinfo: str = "", query: str = "") -> str:
        return f"http://{userinfo}127.0.0.1:{self.port}/hook{query}"

    def wait_for(self, n: int) -> list[dict]:
        """The requests once there are at least ``n`` of them (fails after WAIT_S)."""
        with self.cv:
            assert self.cv.wait_for(lambda: len(self.requests) >= n, WAIT_S), self.requests
            return list(self.requests)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


@pytest.fixture
def catalog(tmp_path):
    cat = Catalog(f"sqlite:///{tmp_path}/c.db")
    yield cat
    cat.close()


@pytest.fixture
def sender():
    s = WebhookSender(retries=3, backoff_s=0.01, timeout_s=5)
    yield s
    s.close()


def create(catalog: Catalog, name: str, session=None, **props) -> str:
    """A job (no Spark: the catalog alone) with JOBPROPERTIES ``props``; its uid."""
    props = {k.replace("_", "."): v for k, v in props.items()}
    assert catalog.create_job("default", name, "insert into t select * from s", props, [],
                              session_properties=session)
    return catalog.get_job("default", name).uid


def evaluate(evaluator: AlertEvaluator, catalog: Catalog, now: datetime):
    return evaluator.evaluate(status_snapshot(catalog), now, catalog.list_jobs())


def deliver(sender: WebhookSender, alerts) -> None:
    for alert in alerts:
        sender.send(alert)
    assert sender.flush(WAIT_S)


def test_a_failed_job_fires_once_and_resolves_when_running_again(catalog, receiver, sender):
    url = receiver.url(userinfo="alice:pa%40ss@")
    uid = create(catalog, "j", streamjob_alert_webhook=url)
    catalog.update_job("default", "j", status="FAILED",
                       last_error="cannot write to postgresql://w:hunter22@db/sink")
    ev = AlertEvaluator()

    fired = evaluate(ev, catalog, at(0))
    assert [(a.status, a.rule, a.job) for a in fired] == [("firing", "failed", "default.j")]
    deliver(sender, fired)
    (post,) = receiver.wait_for(1)
    body = post["body"]
    assert body["status"] == "firing" and body["rule"] == "failed" and body["job"] == "default.j"
    assert body["fingerprint"] == fingerprint(uid, "failed") and body["job_uid"] == uid
    assert body["starts_at"] == "2026-05-01T12:00:00.000Z" and body["ends_at"] is None
    assert "FAILED" in body["summary"] and "hunter22" not in json.dumps(body)  # masked by the catalog
    # credentials travel as basic auth, not in the URL
    assert post["path"] == "/hook"
    assert post["auth"] == "Basic " + base64.b64encode(b"alice:pa@ss").decode()

    for t in (5, 10, 60):  # still FAILED: nothing new
        deliver(sender, evaluate(ev, catalog, at(t)))
    assert len(receiver.requests) == 1 and ev.firing() == [(uid, "failed")]

    catalog.update_job("default", "j", status="RUNNING", last_error=None)
    resolved = evaluate(ev, catalog, at(70))
    deliver(sender, resolved)
    posts = receiver.wait_for(2)
    body = posts[1]["body"]
    assert body["status"] == "resolved" and body["rule"] == "failed"
    assert body["fingerprint"] == posts[0]["body"]["fingerprint"]
    assert body["starts_at"] == "2026-05-01T12:00:00.000Z"
    assert body["ends_at"] == "2026-05-01T12:01:10.000Z"
    assert evaluate(ev, catalog, at(80)) == [] and ev.firing() == []
    assert sender.delivered == 2 and sender.dropped == 0


def test_checkpoint_age_fires_when_the_running_job_stops_checkpointing_and_resolves(
        catalog, receiver, sender):
    uid = create(catalog, "j", streamjob_alert_webhook=receiver.url(),
                 streamjob_alert_checkpoint_age="30 s")
    catalog.update_job("default", "j", status="RUNNING")

    def checkpoint(cid: int, ended: float) -> None:
        catalog.record_checkpoint(uid, cid, started_at=at(ended - 1), ended_at=at(ended),
                                  duration_ms=1000, source_offsets={}, input_rows=1,
                                  retained=5)

    checkpoint(1, 0)
    ev = AlertEvaluator()
    assert evaluate(ev, catalog, at(10)) == []
    assert evaluate(ev, catalog, at(30)) == []  # not older than 30 s yet
    (fired,) = evaluate(ev, catalog, at(31))
    assert (fired.status, fired.rule, fired.value, fired.threshold, fired.unit) == (
        "firing", "checkpoint_age", 31_000, 30_000, "ms")
    assert evaluate(ev, catalog, at(40)) == []
    checkpoint(2, 41)
    (resolved,) = evaluate(ev, catalog, at(45))
    assert (resolved.status, resolved.rule, resolved.value) == ("resolved", "checkpoint_age", 4_000)
    deliver(sender, [fired, resolved])
    bodies = [p["body"] for p in receiver.wait_for(2)]
    assert [(b["status"], b["rule"], b["threshold"]) for b in bodies] == [
        ("firing", "checkpoint_age", 30_000), ("resolved", "checkpoint_age", 30_000)]

    # a stopped job is not checked; restarted, it gets the threshold for its first checkpoint
    catalog.update_job("default", "j", status="STOPPED")
    assert evaluate(ev, catalog, at(500)) == []
    catalog.update_job("default", "j", status="RUNNING")
    assert evaluate(ev, catalog, at(600)) == []
    assert evaluate(ev, catalog, at(630)) == []
    assert [a.status for a in evaluate(ev, catalog, at(631))] == ["firing"]


def test_lag_fires_only_after_staying_above_the_threshold_for_lag_for(catalog):
    uid = create(catalog, "j", streamjob_alert_webhook="https://alerts.example/hook",
                 streamjob_alert_lag_records="100", streamjob_alert_lag_for="30 s")
    server = f"{socket.gethostname()}:{os.getpid()}:alerts01"  # a live job manager: lag is now
    catalog.register_server(server, socket.gethostname(), os.getpid(), "local[1]")
    catalog.update_job("default", "j", status="RUNNING", owner=server)
    ev = AlertEvaluator()

    def lag(records, t):
        catalog.update_progress(uid, {"lag_records": records, "batch_id": 1})
        return evaluate(ev, catalog, at(t))

    assert lag(500, 0) == []      # pending
    assert lag(50, 10) == []      # dipped under: the clock restarts
    assert lag(500, 20) == []
    assert lag(500, 49) == []     # 29 s above
    (fired,) = lag(500, 50)       # 30 s above
    assert (fired.status, fired.rule, fired.value, fired.threshold, fired.unit) == (
        "firing", "lag", 500, 100, "records")
    assert fired.starts_at == at(50) and "lags 500 records" in fired.summary
    assert lag(900, 60) == []     # still firing: no repeat
    (resolved,) = lag(100, 70)    # not above 100
    assert (resolved.status, resolved.value, resolved.ends_at) == ("resolved", 100, at(70))


def test_a_webhook_answering_500_twice_gets_the_alert_on_the_third_try(catalog, sender, caplog):
    receiver = Receiver(statuses=[500, 500])
    caplog.set_level(logging.INFO)
    try:
        create(catalog, "j", streamjob_alert_webhook=receiver.url(query="?token=t0psecret"))
        catalog.update_job("default", "j", status="FAILED", last_error="boom")
        deliver(sender, evaluate(AlertEvaluator(), catalog, at(0)))
        posts = receiver.wait_for(3)
        assert [p["answer"] for p in posts] == [500, 500, 200]
        assert posts[0]["body"] == posts[2]["body"]
        assert sender.delivered == 1 and sender.dropped == 0
        assert posts[2]["path"] == "/hook?token=t0psecret"
        # httpx logs each request at INFO: its URL is masked too; no warning was due
        assert "HTTP Request: POST" in caplog.text and "t0psecret" not in caplog.text
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    finally:
        receiver.close()


def test_an_unreachable_webhook_logs_one_masked_warning_and_never_raises(catalog, sender, caplog):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://alice:s3cret-pw@127.0.0.1:{port}/hook?token=t0psecret"
    create(catalog, "a", streamjob_alert_webhook=url)
    create(catalog, "b", streamjob_alert_webhook=url)
    for name in ("a", "b"):
        catalog.update_job("default", name, status="FAILED", last_error="boom")
    caplog.set_level(logging.DEBUG)
    alerts = evaluate(AlertEvaluator(), catalog, at(0))
    assert len(alerts) == 2
    deliver(sender, alerts)  # send() returned at once; flush waits for the drops
    assert sender.dropped == 2 and sender.delivered == 0
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    message = warnings[0].getMessage()
    assert f"http://alice:***@127.0.0.1:{port}/hook?token=***" in message
    assert "after 4 attempt(s)" in message
    assert "s3cret-pw" not in caplog.text and "t0psecret" not in caplog.text


def test_no_alerts_without_a_webhook(catalog):
    create(catalog, "quiet", streamjob_alert_checkpoint_age="1 s")
    create(catalog, "off", session={"streamjob.alert.webhook": "http://127.0.0.1:9/hook"},
           streamjob_alert_webhook="")  # JOBPROPERTIES '' turns off the session's SET
    create(catalog, "set", session={"streamjob.alert.webhook": "http://127.0.0.1:9/hook"})
    for name in ("quiet", "off", "set"):
        catalog.update_job("default", name, status="FAILED", last_error="boom")
    ev = AlertEvaluator()
    assert [(a.job, a.rule) for a in evaluate(ev, catalog, at(0))] == [("default.set", "failed")]
    assert evaluate(ev, catalog, at(100)) == []


def test_a_dropped_and_recreated_job_starts_fresh(catalog):
    old = create(catalog, "j", streamjob_alert_webhook="http://127.0.0.1:9/hook")
    catalog.update_job("default", "j", status="FAILED")
    ev = AlertEvaluator()
    (first,) = evaluate(ev, catalog, at(0))
    catalog.drop_job("default", "j")
    new = create(catalog, "j", streamjob_alert_webhook="http://127.0.0.1:9/hook")
    catalog.update_job("default", "j", status="FAILED")
    alerts = evaluate(ev, catalog, at(10))
    assert sorted((a.status, a.job_uid) for a in alerts) == [("firing", new), ("resolved", old)]
    assert len({first.fingerprint, *(a.fingerprint for a in alerts)}) == 2
    assert "dropped" in next(a for a in alerts if a.status == "resolved").summary


def test_the_service_evaluates_and_delivers_on_its_thread(catalog, receiver):
    create(catalog, "j", streamjob_alert_webhook=receiver.url())
    catalog.update_job("default", "j", status="FAILED", last_error="boom")
    service = AlertService(catalog, interval_s=0.05,
                           sender=WebhookSender(backoff_s=0.01)).start()
    try:
        (post,) = receiver.wait_for(1)
        assert post["body"]["status"] == "firing"
        catalog.update_job("default", "j", status="RUNNING", last_error=None)
        posts = receiver.wait_for(2)
        assert posts[1]["body"]["status"] == "resolved"
        assert posts[1]["body"]["fingerprint"] == post["body"]["fingerprint"]
    finally:
        service.stop()
    assert len(receiver.requests) == 2
    with pytest.raises(ValueError):
        AlertService(catalog, interval_s=0)


def test_alert_properties_are_checked_and_typed():
    props = jp.values({"streamjob.alert.webhook": "https://h.example/x",
                       "streamjob.alert.checkpoint.age": "5 min",
                       "streamjob.alert.lag.records": "1000"})
    assert (props.alert_webhook, props.alert_checkpoint_age_ms, props.alert_lag_records,
            props.alert_lag_for_ms) == ("https://h.example/x", 300_000, 1000, 60_000)
    assert jp.values({}).alert_webhook is None
    with pytest.raises(PropertyError, match="must be an http:// or https:// URL, got "
                                            r"'ftp://u:\*\*\*@h/x'"):
        jp.validate({"streamjob.alert.webhook": "ftp://u:pw@h/x"})
    with pytest.raises(PropertyError, match="must be between 0 and 2147483647"):
        jp.validate({"streamjob.alert.lag.records": "-5"})
    assert jp.mask("streamjob.alert.webhook", "https://u:pw@h/x") == "https://u:***@h/x"
