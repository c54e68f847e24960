"""The server as the front door (issue 15, DESIGN §8), with real processes: ``streamjob
server --http`` on a SQLite catalog, a token made with ``streamjob token create`` (run in
this process by click's CliRunner), a job submitted by ``streamjob --server URL --token T
submit`` (no catalog access), then, while it runs: ``/metrics`` scraped and parsed with
prometheus_client, the event stream, the progress samples; the job fails (its PostgreSQL
sink refuses connections; no restart allowed) and the alert webhook receives ``firing``,
then after the database is back and the job is started again through the API,
``resolved``."""

from __future__ import annotations

import json
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from click.testing import CliRunner
from prometheus_client.parser import text_string_to_metric_families

from streamjob.cli import main

from .conftest import STREAMJOB
from .faults import database_down, scratch_database
from .test_server import Env, wait_for

pytestmark = pytest.mark.system
#: Seconds this module takes on a fast host: make test hands the longest modules out first
#: (tests/conftest.py), so the run does not end on one of them while the other worker idles.
EXPECTED_S = 25


class Receiver:
    """A webhook receiver on 127.0.0.1: every POSTed JSON body, in order."""

    def __init__(self) -> None:
        self.bodies: list[dict] = []
        cond = self.cond = threading.Condition()
        bodies = self.bodies

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                self.send_response(200)
                self.end_headers()
                with cond:
                    bodies.append(body)
                    cond.notify_all()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def wait(self, status: str, rule: str, timeout: float) -> dict:
        with self.cond:
            found = self.cond.wait_for(lambda: next(
                (b for b in self.bodies if b["status"] == status and b["rule"] == rule), None),
                timeout)
        assert found, (status, rule, self.bodies)
        return found

    def close(self) -> None:
        self.server.shutdown()


def test_a_client_submits_through_the_api_and_a_failure_alerts(tmp_path, broker):
    from streamjob_tools.dev.broker import create_topic

    topic = f"door_{tmp_path.name[-8:]}"
    create_topic(broker.bootstrap, topic, 2)
    env = Env(tmp_path, f"sqlite:///{tmp_path}/home/catalog.db", broker.bootstrap, topic)
    receiver = Receiver()
    try:
        # the CLI's command in this process (click's CliRunner): a Python start less
        made = CliRunner().invoke(main, ["--catalog", env.url, "token", "create", "ops",
                                         "--role", "operator"], env=env.environ(),
                                  catch_exceptions=False)
        assert made.exit_code == 0, made.output
        token = made.stdout.strip()
        server = env.server("--http", "127.0.0.1:0")
        url = server.wait_line(r"HTTP API on (\S+)/v1 ", 60).group(1)
        server.wait_line(r": active \(holds the job manager lease\)", 60)
        http = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"},
                            timeout=60)
        with scratch_database() as pg_url:
            script = tmp_path / "job.sql"
            script.write_text(f"""
CREATE STREAM events (id INT, v STRING)
TBLPROPERTIES ("topic"="{topic}", "kafka.broker.list"="{broker.bootstrap}", "format"="json");
CREATE TABLE out (id INT, v STRING) TBLPROPERTIES ("connector"="sql", "url"="{pg_url}");
CREATE STREAMJOB j AS ("insert into out select id, v from events")
JOBPROPERTIES ("morphling.job.checkpoint.interval"="1000", "morphling.task.max.failures"="-1",
               "streamjob.alert.webhook"="{receiver.url}");
START STREAMJOB j;
""")
            client_home = tmp_path / "client-home"
            submitted = subprocess.run(
                [STREAMJOB, "--server", url, "submit", str(script)], capture_output=True,
                text=True, timeout=300, env={**env.environ(), "STREAMJOB_HOME": str(client_home),
                                             "STREAMJOB_TOKEN": token})
            assert submitted.returncode == 0, submitted.stdout + submitted.stderr
            assert f"server {server.id.rsplit(':', 1)[0]}" in submitted.stdout  # who starts it
            assert not (client_home / "catalog.db").exists()
            env.feed()
            env.wait_job("j", 120, "started by the server", status="RUNNING")
            env.wait_checkpoint_beyond("j", 0, 60)

            def scraped():
                text = http.get("/metrics").text
                samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
                           for f in text_string_to_metric_families(text) for s in f.samples}
                rate = samples.get(("streamjob_job_input_rows_per_second", (("job", "default.j"),)))
                last = samples.get(("streamjob_job_last_checkpoint_id", (("job", "default.j"),)))
                return samples if rate is not None and (last or 0) >= 1 else None

            samples = wait_for(scraped, 60, "metrics with the job's rates")
            assert samples[("streamjob_server_lease_held", ())] == 1
            assert samples[("streamjob_job_status",
                            (("job", "default.j"), ("status", "RUNNING")))] == 1
            assert samples[("streamjob_job_last_checkpoint_id", (("job", "default.j"),))] >= 1
            partitions = {dict(k[1]).get("partition") for k in samples
                          if k[0] == "streamjob_job_partition_lag_records"}
            assert partitions == {"0", "1"}
            assert wait_for(lambda: http.get("/v1/jobs/j/progress").json()["samples"], 30,
                            "a progress sample")
            with http.stream("GET", "/v1/events") as events:
                data = next(line for line in events.iter_lines() if line.startswith("data: "))
                assert json.loads(data[6:])["jobs"][0]["status"] == "RUNNING"

            with database_down(pg_url):
                env.wait_job("j", 120, "failed: its sink is down", status="FAILED")
                fired = receiver.wait("firing", "failed", 60)
                assert fired["job"] == "default.j"
            started = http.post("/v1/jobs/j/start", json={})
            assert started.status_code == 200, started.text
            env.wait_job("j", 120, "running again", status="RUNNING")
            resolved = receiver.wait("resolved", "failed", 60)
            assert resolved["fingerprint"] == fired["fingerprint"]
            assert [(b["status"], b["rule"]) for b in receiver.bodies].count(("firing", "failed")) == 1
            http.post("/v1/jobs/j/stop", json={})
            env.wait_job("j", 120, "stopped", status="STOPPED")
        server.terminate()
        assert server.wait_exit(90) == 0, server.output
        assert "Traceback" not in server.output
    finally:
        receiver.close()
        for s in env.servers:
            s.kill()
        env.close()
