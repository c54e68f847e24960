"""The HTTP API's locked front door (issue 28, docs/security.md "The HTTP API's front
door"), tried as an attacker would against real ``streamjob server --http`` processes:
a first start on a fresh catalog prints its admin token once (never to server.log);
revoking the last token keeps the API closed and ends its open event stream; a web
page's cross-site POST (``text/plain``, no body), a DNS-rebinding Host and a foreign
Origin change nothing; ``--no-auth`` is refused off loopback and warned about on it;
requests are capped (statements per request, a rate per token); a viewer cannot make
the server connect to a broker no stream declares (a real listener records any
connection) nor PRINT an undeclared topic; reads leave no row in the statement log.

The module's server (one catalog, one job ``j`` created by a local client, streams
whose broker is a listener of this test) is shared: each test makes its own tokens, so
the rate limit of one does not touch another. No job runs here, so every server starts
Spark on demand (``--spark-on-demand``): none starts a JVM."""

from __future__ import annotations

import json
import socket
import subprocess

import httpx
import pytest

from streamjob.api.auth import new_token

from .conftest import STREAMJOB, children
from .test_server import Env

pytestmark = pytest.mark.system
#: Seconds this module takes on a fast host: make test hands the longest modules out first
#: (tests/conftest.py), so the run does not end on one of them while the other worker idles.
EXPECTED_S = 20

TOKEN_LINE = r"admin token \(new; shown only now, not logged\): (sjt_\S+)"
URL_LINE = r"HTTP API on (\S+)/v1 "


class Listener:
    """A TCP listener on 127.0.0.1 that records whether anyone connected (a probe)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.setblocking(False)
        self.address = f"127.0.0.1:{self.sock.getsockname()[1]}"

    def connected(self) -> bool:
        """True when a connection is waiting to be accepted (nothing accepts them)."""
        try:
            conn, _ = self.sock.accept()
        except BlockingIOError:
            return False
        conn.close()
        return True

    def close(self) -> None:
        self.sock.close()


def _local(env: Env, *args: str) -> subprocess.CompletedProcess:
    """A local (admin) client on the catalog."""
    return subprocess.run([STREAMJOB, "--catalog", env.url, *args], env=env.environ(),
                          capture_output=True, text=True, timeout=120)


def _url(server) -> str:
    return server.wait_line(URL_LINE, 60).group(1).replace("0.0.0.0", "127.0.0.1")


@pytest.fixture(scope="module")
def door(tmp_path_factory):
    """The module's server: ``(env, url, admin token, listener, no-auth server URL)``."""
    root = tmp_path_factory.mktemp("door")
    listener = Listener()
    env = Env(root, f"sqlite:///{root}/home/catalog.db", listener.address, "declared")
    try:
        made = _local(env, "-e", f"""
CREATE STREAM s (id BIGINT) TBLPROPERTIES ("topic"="declared",
  "kafka.broker.list"="{listener.address}", "format"="json");
CREATE TABLE out (id BIGINT) STORED AS JSON;
CREATE STREAMJOB j AS ("insert into out select id from s");""")
        assert made.returncode == 0, made.stdout + made.stderr
        server = env.server("--http", "127.0.0.1:0", "--spark-on-demand", "--http-rate", "1",
                            "--http-burst", "30")
        url = _url(server)
        token = server.wait_line(TOKEN_LINE, 10).group(1)
        # a second server on the same catalog (a standby), in development mode
        dev = env.server("--http", "127.0.0.1:0", "--spark-on-demand", "--no-auth")
        yield env, url, token, listener, _url(dev), server, dev
    finally:
        env.close()
        listener.close()


def _client(url: str, token: str | None = None) -> httpx.Client:
    return httpx.Client(base_url=url, timeout=60,
                        headers={"Authorization": f"Bearer {token}"} if token else {})


def _token(env: Env, role: str, name: str) -> str:
    value = new_token()
    env.catalog.create_token(name, role, value)
    return value


def test_the_first_start_prints_an_admin_token_once_and_revoking_it_keeps_the_api_closed(tmp_path):
    env = Env(tmp_path, f"sqlite:///{tmp_path}/home/catalog.db", "127.0.0.1:9", "t")
    try:
        # every address: auth required
        first = env.server("--http", "0.0.0.0:0", "--spark-on-demand")
        url = _url(first)
        token = first.wait_line(TOKEN_LINE, 10).group(1)
        first.wait_line(r"HTTP API listening on every address of this machine, among them "
                        r"http://127\.0\.0\.1:\d+", 10)
        assert first.output.count("sjt_") == 1  # one line, once
        assert "--token or STREAMJOB_TOKEN" in first.output
        log = (env.home / "logs" / "server.log").read_text()
        assert "HTTP API on" in log and token not in log and "sjt_" not in log
        [info] = env.catalog.list_tokens()
        assert (info.name, info.role) == ("admin", "admin")

        with _client(url) as anonymous:
            assert anonymous.get("/v1/jobs").status_code == 401
        standby = env.server("--http", "127.0.0.1:0", "--spark-on-demand")  # tokens exist now
        _url(standby)
        assert "sjt_" not in standby.output
        # --spark-on-demand: no job ran, so neither server started a Spark JVM
        for server in (first, standby):
            assert "java" not in children(server.proc.pid).values(), server.output

        with _client(url, token) as http:
            assert http.get("/v1/jobs").json() == {"jobs": []}
            with http.stream("GET", "/v1/events") as events:
                lines = events.iter_lines()
                assert next(x for x in lines if x.startswith("data: "))
                revoked = _local(env, "token", "revoke", "admin")  # the last token
                assert revoked.returncode == 0, revoked.stderr
                rest = list(lines)  # the stream ends by itself
            ends = [json.loads(x[6:]) for x in rest if x.startswith("data: ")]
            assert "event: end" in rest and ends[-1]["reason"] == "token revoked", rest
            assert http.get("/v1/jobs").status_code == 401  # no token left: still closed
        with _client(url) as anonymous:
            r = anonymous.get("/v1/jobs")
            assert r.status_code == 401 and r.headers["WWW-Authenticate"].startswith("Bearer")
        listed = _local(env, "token", "list")
        assert "lets no one in" in listed.stdout
    finally:
        env.close()


def test_no_auth_is_refused_off_loopback_and_warned_about_on_it(door, tmp_path):
    env, *_rest, dev = door
    dev.wait_line(r"WARNING: --no-auth: http://127\.0\.0\.1:\d+ accepts requests without a token", 10)
    assert "sjt_" not in dev.output
    refused = subprocess.run([STREAMJOB, "--catalog", env.url, "server", "--http", "0.0.0.0:0",
                              "--no-auth"], env=env.environ(), capture_output=True, text=True,
                             timeout=60)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "--no-auth is allowed only on a loopback address" in refused.stderr
    assert "job manager on" not in refused.stdout


def test_a_cross_site_post_a_rebinding_host_and_a_foreign_origin_change_nothing(door):
    env, url, _token_, _listener, dev_url, *_ = door
    operator = _token(env, "operator", "cross-site")
    for base, token in ((dev_url, None), (url, operator)):  # no token needed in --no-auth
        with _client(base, token) as http:
            # what an HTML form or a "simple" fetch from any web page can send
            r = http.post("/v1/jobs/j/start", headers={"Content-Type": "text/plain"})
            assert r.status_code == 415, r.text
            assert "application/json" in r.json()["error"]["message"]
            r = http.post("/v1/statements", content=b'{"sql": "STOP STREAMJOB j"}',
                          headers={"Content-Type": "application/x-www-form-urlencoded"})
            assert r.status_code == 415
            assert env.job("j").desired_state == "STOPPED"

            port = base.rsplit(":", 1)[1]
            rebound = http.get("/v1/jobs", headers={"Host": f"attacker.example:{port}"})
            assert rebound.status_code == 403 and "Host" in rebound.json()["error"]["message"]
            r = http.post("/v1/jobs/j/start", json={},
                          headers={"Origin": "http://attacker.example"})
            assert r.status_code == 403 and r.json()["error"]["type"] == "ForeignOrigin"
            r = http.post("/v1/jobs/j/start", json={}, headers={"Origin": "null"})
            assert r.status_code == 403
            assert env.job("j").desired_state == "STOPPED"
            # the server's own names and origin are fine
            assert http.get("/v1/jobs", headers={"Host": f"localhost:{port}"}).status_code == 200
            assert http.get("/v1/jobs", headers={"Origin": base}).status_code == 200


def test_statements_per_request_are_capped_and_each_token_is_rate_limited(door):
    env, url, *_ = door
    with _client(url, _token(env, "viewer", "capped")) as http:
        r = http.post("/v1/statements", json={"sql": "SHOW STREAMS;" * 101})
        assert r.status_code == 413, r.text
        assert r.json()["error"]["type"] == "TooManyStatements"
        assert "at most 100" in r.json()["error"]["message"]
        assert http.post("/v1/statements", json={"sql": "SHOW STREAMS;" * 100}).status_code == 200

    busy, calm = _token(env, "viewer", "busy"), _token(env, "viewer", "calm")
    with _client(url, busy) as http:
        codes = [http.get("/v1/status") for _ in range(45)]  # burst 30, then 1/s
    limited = [r for r in codes if r.status_code == 429]
    assert limited and all(r.status_code in (200, 429) for r in codes)
    assert int(limited[0].headers["Retry-After"]) >= 1
    assert "rate limit" in limited[0].json()["error"]["message"]
    with _client(url, calm) as http:  # another token has its own bucket
        assert http.get("/v1/status").status_code == 200


def test_a_viewer_reads_declared_objects_only_and_reads_are_not_logged(door):
    env, url, _admin, listener, *_ = door
    viewer = _token(env, "viewer", "reader")
    before = len(env.catalog.statement_log(100_000))
    with _client(url, viewer) as http:
        probe = http.post("/v1/statements", json={"sql": f"SHOW TOPICS FROM '{listener.address}'"})
        assert probe.status_code == 403, probe.text
        assert probe.json()["error"]["type"] == "AccessDeniedError"
        for sql in ("PRINT 'secret' LIMIT 1", "PRINT undeclared LIMIT 1",
                    f"PRINT 'declared' FROM '{listener.address}' LIMIT 1"):
            r = http.post("/v1/statements", json={"sql": sql})
            assert r.status_code == 403, (sql, r.text)
            assert "declared objects only" in r.json()["error"]["message"]
        assert not listener.connected()  # no connection was even tried

        for _ in range(10):  # reads leave no row in the catalog (within the burst of 30)
            assert http.post("/v1/statements", json={"sql": "SHOW STREAMS; DESCRIBE s"}).status_code == 200
            assert http.get("/v1/jobs/j").status_code == 200
    assert len(env.catalog.statement_log(100_000)) == before
    with _client(url, _token(env, "operator", "writer")) as http:  # changes are logged
        assert http.post("/v1/statements", json={"sql": "CREATE DATABASE d1"}).status_code == 200
    [latest] = env.catalog.statement_log(1)
    assert (latest.principal, latest.kind) == ("token:writer", "CreateDatabase")


def test_bad_input_is_never_a_500(door):
    env, url, *_ = door
    with _client(url, _token(env, "operator", "fuzzer")) as http:
        for body in ({"sql": "SELECT " + "(" * 3000 + "1" + ")" * 3000},
                     {"sql": "SHOW STREAMS", "properties": {"a": ["x"]}},
                     {"sql": "\x00"}):
            r = http.post("/v1/statements", json=body)
            assert 400 <= r.status_code < 500, (r.status_code, r.text[:300])
            assert "Traceback" not in r.text
        r = http.post("/v1/statements", content=b"\xff\xfe", headers={"Content-Type": "application/json"})
        assert r.status_code == 400
