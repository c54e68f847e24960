"""Clients against a live server (issue 6): one client watches (``status --watch
--json``) while another submits, stops and drops a job; ``list --json`` from a third.
Real processes on SQLite and PostgreSQL catalogs (the ``env`` fixture of test_server)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time

import pytest

from .conftest import STREAMJOB
from .test_server import JOB_SQL, env  # noqa: F401 - env is the fixture used below

# slow (make test-slow, CI): a server and three client processes; the server's own scenario stays in `make test` (test_server.py)
pytestmark = [pytest.mark.system, pytest.mark.slow]


class Watcher:
    """``streamjob status --watch --json``: one JSON document per refresh, collected."""

    def __init__(self, env) -> None:  # noqa: F811 - the fixture's value
        self.proc = subprocess.Popen(
            [STREAMJOB, "--catalog", env.url, "status", "--watch", "--json", "--interval", "0.3"],
            env=env.environ(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True)
        self.docs: list[dict] = []
        self._cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            with self._cond:
                self.docs.append(json.loads(line))
                self._cond.notify_all()

    def wait(self, predicate, timeout: float, what: str) -> dict:
        """The first refresh after now for which ``predicate(doc)`` holds."""
        deadline = time.monotonic() + timeout
        with self._cond:
            seen = len(self.docs)
            while True:
                for doc in self.docs[seen:]:
                    if predicate(doc):
                        return doc
                seen = len(self.docs)
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    pytest.fail(f"the watcher did not show {what} within {timeout} s; last: "
                                f"{self.docs[-1] if self.docs else None}; "
                                f"stderr: {self.proc.stderr.read() if self.proc.poll() is not None else ''}")
                self._cond.wait(min(left, 0.5))

    def stop(self) -> int:
        os.killpg(self.proc.pid, signal.SIGINT)
        return self.proc.wait(30)


def _state(doc: dict, job: str):
    return next((j["status"] for j in doc["jobs"] if j["job"] == f"default.{job}"), None)


def _client(env, *args: str) -> subprocess.CompletedProcess:  # noqa: F811
    res = subprocess.run([STREAMJOB, *args, "--catalog", env.url], env=env.environ(),
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    return res


def test_one_client_watches_while_another_submits_stops_and_drops(env):  # noqa: F811
    env.feed()
    server = env.server()
    watcher = Watcher(env)
    try:
        doc = watcher.wait(lambda d: d["server"] is not None, 60, "the server")
        assert doc["server"]["server_id"] == server.id
        env.create_job("watched")
        doc = watcher.wait(lambda d: _state(d, "watched") == "RUNNING", 180, "the job RUNNING")
        listed = json.loads(_client(env, "list", "--json").stdout)
        assert [j for j in listed if j.get("name", j.get("job", "")).endswith("watched")]
        watcher.wait(lambda d: next((j["batch"] for j in d["jobs"]
                                     if j["job"] == "default.watched"), None) is not None,
                     120, "a batch of the job")
        _client(env, "stop", "watched")
        watcher.wait(lambda d: _state(d, "watched") == "STOPPED", 120, "the job STOPPED")
        _client(env, "drop", "watched")
        watcher.wait(lambda d: _state(d, "watched") is None, 60, "the job gone")
    finally:
        assert watcher.stop() == 0
