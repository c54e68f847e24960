"""The HTTP API (issue 15) against a real server: uvicorn serving streamjob.api on a free
port of 127.0.0.1, over a SQLite and a PostgreSQL catalog, driven with httpx as any
client would. No Spark: CREATE STREAMJOB without a Spark session skips Spark's own
analysis (the server gives it its session)."""

from __future__ import annotations

import json
import threading
from datetime import datetime, timedelta, timezone

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from streamjob import shapes
from streamjob.api import create_app
from streamjob.api.auth import new_token
from streamjob.api.serve import HttpService
from streamjob.catalog import Catalog
from streamjob.exceptions import StreamJobError
from streamjob.home import Home

pytestmark = pytest.mark.component  # PostgreSQL for the catalog

SCRIPT = """CREATE STREAM s (id BIGINT, name STRING)
  TBLPROPERTIES ("topic"="t", "kafka.broker.list"="127.0.0.1:9", "format"="json");
CREATE TABLE out (id BIGINT, name STRING)
  TBLPROPERTIES ("connector"="sql", "url"="sqlite:///{tmp}/out.db", "table"="out");
CREATE STREAMJOB j AS ("insert into out select id, name from s");
"""


class Api:
    """A served app and a client of it (``http`` carries an operator token, ``token``)."""

    def __init__(self, tmp_path, catalog_url: str) -> None:
        self.tmp = tmp_path
        # the admin lets operators (anonymous here) use the test's directory (issue 28)
        self.home = Home.open(str(tmp_path / "home"),
                              {"streamjob.security.file.roots": str(tmp_path)}, catalog_url)
        self.catalog = Catalog(catalog_url)
        self.token = new_token()
        self.catalog.create_token("test", "operator", self.token)
        self.service = HttpService(create_app(self.catalog, self.home), "127.0.0.1:0")
        self.url = self.service.start()
        self.http = httpx.Client(base_url=self.url, timeout=30, headers=_auth(self.token))

    def sql(self, text: str, token: str | None = None, **props) -> httpx.Response:
        return self.http.post("/v1/statements", json={"sql": text, "properties": props},
                              headers=_auth(token))

    def close(self) -> None:
        self.http.close()
        self.service.stop()
        self.catalog.close()


def _auth(token: str | None) -> dict:
    return {"Authorization": f"Bearer {token}"} if token else {}


@pytest.fixture
def api(tmp_path, catalog_url):
    a = Api(tmp_path, catalog_url)
    yield a
    a.close()


def _checkpoint(api: Api, uid: str, checkpoint_id: int, **fields) -> None:
    now = datetime.now(timezone.utc)
    api.catalog.record_checkpoint(uid, checkpoint_id, started_at=now, ended_at=now,
                                  source_offsets=None, retained=5, **fields)


def _create_job(api: Api, token: str | None = None) -> None:
    r = api.sql(SCRIPT.format(tmp=api.tmp), token)
    assert r.status_code == 200, r.text


def test_statements_execute_in_order_and_errors_name_line_column_and_snippet(api):
    r = api.sql("SET streamjob.trigger.interval = '2s';\nSHOW STREAMS")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["properties"] == {"streamjob.trigger.interval": "2s"}  # the session's, back
    assert body["results"][1]["columns"] == ["database", "stream", "source"]

    bad = ("CREATE STREAM s2 (id BIGINT) TBLPROPERTIES (\"topic\"=\"t\", "
           "\"kafka.broker.list\"=\"127.0.0.1:9\", \"formt\"=\"json\")")
    r = api.sql(SCRIPT.format(tmp=api.tmp) + bad)
    assert r.status_code == 400
    body = r.json()
    assert body["results"] == []  # tried whole on a scratch catalog first: nothing ran
    error = body["error"]
    assert error["type"] == "PropertyError" and "format" in error["message"]  # did you mean
    assert (error["line"], error["column"]) == (6, bad.index('"formt"') + 1)
    assert error["snippet"].splitlines()[1].index("^") == bad.index('"formt"')
    assert error["note"] is None and api.catalog.get_stream("default", "s") is None
    r = api.sql(SCRIPT.format(tmp=api.tmp))  # the fixed script applies: nothing was left
    assert r.status_code == 200 and len(r.json()["results"]) == 3, r.text

    r = api.sql("SHOW STREAMS;\nCREAT TABLE x")
    assert r.status_code == 400 and r.json()["results"] == []  # parsed whole: nothing ran
    assert (r.json()["error"]["line"], r.json()["error"]["text"]) == (2, "CREAT")
    assert [s["stream"] for s in api.http.get("/v1/streams").json()["streams"]] == ["s"]


def test_jobs_checkpoints_runs_progress_start_stop_and_drop(api):
    _create_job(api)
    [job] = api.http.get("/v1/jobs").json()["jobs"]
    assert (job["job"], job["status"], job["desired_state"]) == ("default.j", "CREATED", "STOPPED")
    assert tuple(job) == shapes.JOB_KEYS  # the job of `streamjob list --json` (docs/json.md)
    info = api.catalog.require_job("default", "j")
    _checkpoint(api, info.uid, 0, duration_ms=120, input_rows=42, state_rows=7)
    run = api.catalog.start_run(info.uid, 1)
    api.catalog.end_run(run, "FAILED", "broker down")
    t0 = datetime.now(timezone.utc) - timedelta(seconds=30)
    for i in range(3):
        api.catalog.add_progress_sample(info.uid, {"batch_id": i, "input_rows_per_s": 10.0 * i,
                                                   "processed_rows_per_s": 20.0 * i,
                                                   "lag_records": 100 - i},
                                        at=t0 + timedelta(seconds=10 * i))

    detail = api.http.get("/v1/jobs/default.j").json()
    assert tuple(detail) == shapes.JOB_KEYS + shapes.JOB_DETAIL_KEYS  # `describe j --json`
    assert detail["query"] == "insert into out select id, name from s"
    assert detail["guarantee"] == "exactly-once"
    origins = {p["property"]: p["origin"] for p in detail["properties"]}
    assert origins["morphling.task.max.failures"] == "default"
    assert [c["checkpoint_id"] for c in detail["checkpoints"]] == [0]
    assert detail["runs"][0]["cause"] == "broker down"
    assert api.http.get("/v1/jobs/j/checkpoints").json()["checkpoints"][0]["input_rows"] == 42
    [run] = api.http.get("/v1/jobs/j/runs").json()["runs"]
    assert (run["run"], run["status"], tuple(run)) == (1, "FAILED", shapes.RUN_KEYS)
    samples = api.http.get("/v1/jobs/j/progress").json()["samples"]
    assert [s["lag_records"] for s in samples] == [100, 99, 98]  # oldest first

    started = api.http.post("/v1/jobs/j/start", json={}).json()["results"][0]
    assert started["pending"] is True and started["runs_in"] is None  # no job manager here
    assert api.catalog.require_job("default", "j").desired_state == "RUNNING"
    assert api.http.post("/v1/jobs/j/stop", json={}).status_code == 200
    assert api.catalog.require_job("default", "j").desired_state == "STOPPED"
    assert api.http.post("/v1/jobs/j/start", json={"from_checkpoint": 5}).status_code == 400
    assert api.http.delete("/v1/jobs/default.j").status_code == 200
    assert api.http.get("/v1/jobs/j").status_code == 404
    assert api.http.delete("/v1/jobs/j").json()["error"]["type"] == "ObjectNotFoundError"
    assert api.http.get("/v1/jobs/no%20such").status_code in (400, 404)


def test_status_streams_and_tables_read_as_describe_shows_them(api):
    _create_job(api)
    r = api.sql('CREATE STREAM sasl (id BIGINT) TBLPROPERTIES ("topic"="t", '
                '"kafka.broker.list"="127.0.0.1:9", "kafka.security.protocol"="SASL_PLAINTEXT", '
                '"kafka.sasl.mechanism"="PLAIN", "kafka.sasl.username"="u", '
                '"kafka.sasl.password"="hunter2")')
    assert r.status_code == 200, r.text
    status = api.http.get("/v1/status").json()
    assert status["server"] is None and [j["job"] for j in status["jobs"]] == ["default.j"]
    assert [t["table"] for t in api.http.get("/v1/tables").json()["tables"]] == ["out"]
    stream = api.http.get("/v1/streams/sasl")
    assert stream.status_code == 200 and "hunter2" not in stream.text  # masked
    assert [c["column"] for c in stream.json()["columns"]] == ["id"]
    assert (stream.json()["stream"], tuple(stream.json())) == ("default.sasl", shapes.STREAM_KEYS)
    props = {p["property"]: p["value"] for p in stream.json()["properties"]}
    assert props["topic"] == "t" and props["kafka.sasl.password"] != "hunter2"
    table = api.http.get("/v1/tables/default.out").json()
    assert [c["column"] for c in table["columns"]] == ["id", "name"]
    assert api.http.get("/v1/tables/s").status_code == 404  # a stream, not a table
    assert api.http.get("/v1/streams/nope").status_code == 404


def test_tokens_and_roles(api):
    _create_job(api)
    viewer, operator = new_token(), new_token()
    api.catalog.create_token("ci", "viewer", viewer)
    api.catalog.create_token("ops", "operator", operator)
    log_before = len(api.catalog.statement_log(1000))

    for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": f"Basic {viewer}"},
                    {"Authorization": f"Bearer {viewer}x"}):
        for method, path in (("GET", "/v1/jobs"), ("GET", "/metrics"), ("GET", "/v1/events"),
                             ("POST", "/v1/statements"), ("DELETE", "/v1/jobs/j")):
            with httpx.Client(base_url=api.url, timeout=30) as bare:
                r = bare.request(method, path, headers=headers, json={"sql": "DROP STREAMJOB j"})
            assert r.status_code == 401, (method, path, headers, r.text)
            assert r.headers["WWW-Authenticate"].startswith("Bearer")
    assert len(api.catalog.statement_log(1000)) == log_before  # no trace in the catalog
    assert api.catalog.require_job("default", "j")
    assert {t.name: t.last_used_at for t in api.catalog.list_tokens() if t.name != "test"} == \
        {"ci": None, "ops": None}

    assert api.http.get("/v1/jobs", headers=_auth(viewer)).status_code == 200
    # the caller's role, for the console to offer actions only where the API allows them
    assert api.http.get("/v1/whoami", headers=_auth(viewer)).json() == \
        {"principal": "token:ci", "role": "viewer", "may_change": False}
    assert api.http.get("/v1/whoami", headers=_auth(operator)).json() == \
        {"principal": "token:ops", "role": "operator", "may_change": True}
    with httpx.Client(base_url=api.url, timeout=30) as bare:
        assert bare.get("/v1/whoami").status_code == 401
    assert api.sql("SHOW STREAMJOBS; DESCRIBE STREAMJOB j", viewer).status_code == 200
    refused = api.sql("SHOW STREAMS; STOP STREAMJOB j", viewer)
    assert refused.status_code == 403 and "StopStreamJob needs an operator" in refused.text
    assert api.http.post("/v1/jobs/j/start", json={}, headers=_auth(viewer)).status_code == 403
    assert api.catalog.require_job("default", "j").desired_state == "STOPPED"

    assert api.http.post("/v1/jobs/j/start", json={}, headers=_auth(operator)).status_code == 200
    [latest] = api.catalog.statement_log(1)
    assert (latest.principal, latest.kind, latest.object, latest.ok) == \
        ("token:ops", "StartStreamJob", "default.j", True)
    assert {t.name for t in api.catalog.list_tokens() if t.last_used_at} == {"ci", "ops", "test"}
    api.catalog.revoke_token("ops")
    assert api.http.post("/v1/jobs/j/stop", json={}, headers=_auth(operator)).status_code == 401


def test_bad_json_huge_bodies_and_concurrent_submits(api):
    r = api.http.post("/v1/statements", content=b"{not json",
                      headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and r.json()["error"]["type"] == "BadRequest"
    assert api.http.post("/v1/statements", json={"sq": "SHOW STREAMS"}).status_code == 400
    assert api.http.post("/v1/statements", json={"sql": 5}).status_code == 400
    huge = json.dumps({"sql": "-- " + "x" * (5 << 20)}).encode()
    assert api.http.post("/v1/statements", content=huge,
                         headers={"Content-Type": "application/json"}).status_code == 413

    def chunks():  # no Content-Length: the limit counts what arrives
        yield b'{"sql": "-- '
        for _ in range(80):
            yield b"y" * (64 << 10)
        yield b'"}'

    assert api.http.post("/v1/statements", content=chunks(),
                         headers={"Content-Type": "application/json"}).status_code == 413

    # ten clients at once: each creates its own stream, and all race for one name
    barrier = threading.Barrier(10)
    outcomes: list[tuple[int, int]] = []

    def client(i: int) -> None:
        with httpx.Client(base_url=api.url, timeout=60, headers=_auth(api.token)) as http:
            barrier.wait()
            mine = http.post("/v1/statements", json={"sql": (
                f"CREATE STREAM own{i} (id BIGINT) TBLPROPERTIES (\"topic\"=\"t{i}\", "
                "\"kafka.broker.list\"=\"127.0.0.1:9\")")})
            shared = http.post("/v1/statements", json={"sql": (
                "CREATE STREAM shared (id BIGINT) TBLPROPERTIES (\"topic\"=\"t\", "
                "\"kafka.broker.list\"=\"127.0.0.1:9\")")})
            outcomes.append((mine.status_code, shared.status_code))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert sorted(o[0] for o in outcomes) == [200] * 10
    assert sorted(o[1] for o in outcomes) == [200] + [400] * 9  # exactly one wins
    names = {s["stream"] for s in api.http.get("/v1/streams").json()["streams"]}
    assert names == {f"own{i}" for i in range(10)} | {"shared"}


def test_events_follow_status_changes(api):
    _create_job(api)
    with api.http.stream("GET", "/v1/events") as resp:
        assert resp.headers["content-type"].startswith("text/event-stream")
        lines = resp.iter_lines()

        def next_status() -> dict:
            for line in lines:
                if line.startswith("data: "):
                    return json.loads(line[6:])
            raise AssertionError("the event stream ended")

        first = next_status()
        assert [j["status"] for j in first["jobs"]] == ["CREATED"]
        api.catalog.update_job("default", "j", status="FAILED", last_error="boom")
        second = next_status()  # pushed, without asking again
        assert [(j["status"], j["error"]) for j in second["jobs"]] == [("FAILED", "boom")]


def test_metrics_parse_with_prometheus_client(api):
    _create_job(api)
    info = api.catalog.require_job("default", "j")
    _checkpoint(api, info.uid, 3, duration_ms=250, input_rows=10, state_rows=4,
                state_bytes=2048)
    api.catalog.add_malformed_counts(info.uid, {"default.s": 2})
    families = {f.name: f for f in text_string_to_metric_families(api.http.get("/metrics").text)}
    value = {(f.name, s.name, tuple(sorted(s.labels.items()))): s.value
             for f in families.values() for s in f.samples}
    job = (("job", "default.j"),)
    assert value[("streamjob_job_status", "streamjob_job_status",
                  (("job", "default.j"), ("status", "CREATED")))] == 1
    assert value[("streamjob_job_status", "streamjob_job_status",
                  (("job", "default.j"), ("status", "RUNNING")))] == 0
    assert value[("streamjob_job_checkpoint_duration_seconds",
                  "streamjob_job_checkpoint_duration_seconds", job)] == 0.25
    assert value[("streamjob_job_state_rows", "streamjob_job_state_rows", job)] == 4
    assert value[("streamjob_job_state_bytes", "streamjob_job_state_bytes", job)] == 2048
    assert value[("streamjob_job_last_checkpoint_id", "streamjob_job_last_checkpoint_id", job)] == 3
    assert value[("streamjob_job_malformed_records", "streamjob_job_malformed_records_total",
                  (("job", "default.j"), ("stream", "default.s")))] == 2
    assert families["streamjob_job_failures"].type == "counter"
    assert value[("streamjob_server_lease_held", "streamjob_server_lease_held", ())] == 0


def test_openapi_and_console_are_served(api):
    schema = api.http.get("/openapi.json").json()
    assert {"/v1/statements", "/v1/jobs", "/v1/jobs/{name}", "/v1/jobs/{name}/checkpoints",
            "/v1/events", "/metrics"} <= set(schema["paths"])
    page = api.http.get("/")
    assert page.status_code == 200 and "console.js" in page.text
    assert api.http.get("/console/console.js").status_code == 200
    assert api.http.get("/docs").status_code == 404  # Swagger UI would load from a CDN


def test_https_with_a_certificate(tmp_path):
    import trustme

    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    cert_pem, key_pem, ca_pem = (tmp_path / "cert.pem", tmp_path / "key.pem", tmp_path / "ca.pem")
    cert.cert_chain_pems[0].write_to_path(str(cert_pem))
    for extra in cert.cert_chain_pems[1:]:
        extra.write_to_path(str(cert_pem), append=True)
    cert.private_key_pem.write_to_path(str(key_pem))
    ca.cert_pem.write_to_path(str(ca_pem))
    home = Home.open(str(tmp_path / "home"), {}, None)
    catalog = Catalog(home.catalog_url)
    token = new_token()
    catalog.create_token("t", "viewer", token)
    service = HttpService(create_app(catalog, home), "127.0.0.1:0", str(cert_pem), str(key_pem))
    try:
        url = service.start()
        assert url.startswith("https://127.0.0.1:")
        with httpx.Client(verify=str(ca_pem), headers=_auth(token)) as https:
            assert https.get(url + "/v1/jobs").json() == {"jobs": []}
        with httpx.Client() as untrusting:  # the system's CAs do not know this one
            with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                untrusting.get(url + "/v1/jobs")
    finally:
        service.stop()
        catalog.close()
    with pytest.raises(StreamJobError, match="cannot load the TLS certificate"):
        HttpService(create_app(catalog, home), "127.0.0.1:0", str(ca_pem), str(ca_pem)).start()
    busy = HttpService(create_app(catalog, home), "127.0.0.1:0")
    taken = busy.start()
    try:
        with pytest.raises(StreamJobError, match=f"cannot serve HTTP on {taken[7:]}"):
            HttpService(create_app(catalog, home), taken[7:]).start()
    finally:
        busy.stop()
        catalog.close()


def test_a_viewer_may_explain_a_job_and_an_insert(api):
    """EXPLAIN (issue 18) reads only: a viewer token runs it through /v1/statements, and
    the answer's data is the explain shape of docs/json.md; nothing is registered."""
    _create_job(api)
    viewer = new_token()
    api.catalog.create_token("reader", "viewer", viewer)
    r = api.sql("EXPLAIN STREAMJOB j", viewer)
    assert r.status_code == 200, r.text
    data = r.json()["results"][0]["data"]
    assert list(data) == list(shapes.EXPLAIN_KEYS)
    assert (data["job"], data["guarantee"], data["physical_plan"]) == (
        "default.j", "exactly-once", None)
    assert data["sources"][0]["location"] == "topic t at 127.0.0.1:9"
    r = api.sql("EXPLAIN INSERT INTO out SELECT id, name FROM s", viewer)
    assert r.status_code == 200, r.text
    assert r.json()["results"][0]["data"]["exists"] is False
    assert [j.name for j in api.catalog.list_jobs()] == ["j"]


def test_query_upgrades_through_the_api_keep_the_roles_and_list_versions(api):
    """ALTER STREAMJOB ... AS (issue 30) through /v1/statements: a viewer is refused, an
    operator's change is a new version by its token's principal, listed by
    /v1/jobs/{name}/versions and the job detail."""
    _create_job(api)
    viewer, operator = new_token(), new_token()
    api.catalog.create_token("reader", "viewer", viewer)
    api.catalog.create_token("ops", "operator", operator)
    sql = "ALTER STREAMJOB j AS ('insert into out select id, upper(name) from s where id > 0')"
    refused = api.sql(sql, viewer)
    assert refused.status_code == 403 and "ReplaceStreamJobQuery needs an operator" in refused.text
    r = api.sql(sql, operator)
    assert r.status_code == 200, r.text
    result = r.json()["results"][0]
    assert "altered to version 2: stateless change" in result["message"]
    assert result["data"]["change"]["class"] == "stateless"
    got = api.http.get("/v1/jobs/j/versions", headers=_auth(viewer))
    assert got.status_code == 200, got.text
    versions = got.json()["versions"]
    assert [(v["version"], v["principal"], v["change"]) for v in versions] == [
        (1, "token:test", None), (2, "token:ops", "stateless")]
    assert api.http.get("/v1/jobs/j", headers=_auth(viewer)).json()["versions"] == versions
    bad = api.sql("ALTER STREAMJOB j AS ('insert into out select id, count(*) from s "
                  "group by id')", operator)
    assert bad.status_code == 400, bad.text  # planned as at CREATE: changes nothing
    assert len(api.catalog.list_job_versions(api.catalog.get_job("default", "j").uid)) == 2


def test_savepoint_statements_through_the_api_keep_the_roles(api):
    """Savepoints (issue 30) through /v1/statements, the same executor: a viewer may SHOW
    them and nothing more; an operator's CREATE reaches the executor (a job without a
    checkpoint yet has nothing to keep, said with its position)."""
    _create_job(api)
    viewer, operator = new_token(), new_token()
    api.catalog.create_token("reader", "viewer", viewer)
    api.catalog.create_token("ops", "operator", operator)
    r = api.sql("SHOW SAVEPOINTS; SHOW SAVEPOINTS FOR j", viewer)
    assert r.status_code == 200, r.text
    assert [res["data"] for res in r.json()["results"]] == [[], []]
    for sql, kind in (("CREATE SAVEPOINT sp FOR STREAMJOB j", "CreateSavepoint"),
                      ("DROP SAVEPOINT sp FOR STREAMJOB j", "DropSavepoint"),
                      ("STOP STREAMJOB j WITH SAVEPOINT sp", "StopStreamJob"),
                      ("START STREAMJOB j FROM SAVEPOINT sp", "StartStreamJob")):
        refused = api.sql(sql, viewer)
        assert refused.status_code == 403 and f"{kind} needs an operator" in refused.text
    r = api.sql("CREATE SAVEPOINT sp FOR STREAMJOB j", operator)
    assert r.status_code == 400, r.text
    assert "it has no checkpoint yet to keep" in r.json()["error"]["message"]
    assert api.catalog.list_savepoints() == []
    got = api.http.get("/v1/jobs/j/savepoints", headers=_auth(viewer))
    assert got.status_code == 200 and got.json() == {"savepoints": []}
    r = api.http.post("/v1/jobs/j/start", json={"from_savepoint": "nope"}, headers=_auth(operator))
    assert r.status_code == 400 and "has no savepoint nope; it has none" in r.text
    r = api.http.post("/v1/jobs/j/stop", json={"savepoint": "x; DROP"}, headers=_auth(operator))
    assert r.status_code in (400, 422)  # not a savepoint name: never reaches the SQL
    assert api.http.post("/v1/jobs/j/stop", json={"savepoint": "s"},
                         headers=_auth(viewer)).status_code == 403


def test_delta_maintenance_through_the_api_keeps_the_roles(api):
    """OPTIMIZE and VACUUM (issue 32) change a table's files: a viewer token is refused
    at the door (403), an operator's runs within the file roots and answers with the
    documented shape (docs/json.md)."""
    import pyarrow as pa
    from deltalake import write_deltalake

    from streamjob.api.auth import READ_ONLY
    from streamjob.grammar import statements as st

    assert not issubclass(st.OptimizeTable, READ_ONLY) and not issubclass(st.VacuumTable, READ_ONLY)
    where = api.tmp / "lake"
    for i in range(3):
        write_deltalake(str(where), pa.table({"id": [i]}), mode="append")
    r = api.sql(f"CREATE TABLE lake (id BIGINT) STORED AS DELTA LOCATION '{where}'")
    assert r.status_code == 200, r.text
    viewer = new_token()
    api.catalog.create_token("reader", "viewer", viewer)
    for sql in ("OPTIMIZE TABLE lake", "VACUUM TABLE lake DRY RUN"):
        refused = api.sql(sql, viewer)
        assert refused.status_code == 403 and "needs an operator" in refused.text
    r = api.sql("OPTIMIZE TABLE lake; VACUUM TABLE lake RETAIN 0 HOURS DRY RUN")
    assert r.status_code == 200, r.text
    optimized, listed = (x["data"] for x in r.json()["results"])
    assert (optimized["table"], optimized["files_removed"], optimized["files_added"]) == \
        ("default.lake", 3, 1)
    assert listed["dry_run"] is True and listed["files_deleted"] == 3
    assert len(list(where.glob("*.parquet"))) == 4  # a dry run deletes nothing
