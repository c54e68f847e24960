"""A START that lands between a job's failure and the job manager noticing it is not lost
(found by the front-door test under load: the server read the job's row after the
client's START, took that row as the failure it had seen, and never started the job).

The job manager's reconcile pass is driven by hand here, in this process, with the
session's Spark and broker: start, fail (a topic the broker lacks fails at once; no failure
allowed, so the first attempt ends it FAILED, with no backoff and second attempt), START
from a client, one pass."""

from __future__ import annotations

import os
import socket
import uuid

import pytest

from streamjob.catalog.records import JobStatus
from streamjob.manager.server import JobServer

from .conftest import wait_for
from .world import World

pytestmark = pytest.mark.spark


def test_a_start_written_before_the_server_sees_the_failure_starts_the_job(tmp_path, broker):
    w = World(tmp_path)
    server = JobServer(w.catalog, w.home)
    w.catalog.register_server(server.server_id, socket.gethostname(), os.getpid(), "local[2]")
    assert w.catalog.acquire_lease(server.server_id, 60_000)
    server.lease.held = True  # what the lease thread sets once the lease is held
    try:
        w.run(f"""
CREATE STREAM s (id INT) TBLPROPERTIES ("topic"="race_{uuid.uuid4().hex[:8]}",
  "kafka.broker.list"="{broker.bootstrap}", "kafka.request.timeout.ms"="1000");
CREATE TABLE t (id INT) STORED AS PARQUET;
CREATE STREAMJOB j AS ("insert into t select id from s")
JOBPROPERTIES ("morphling.task.max.failures"="0");
START STREAMJOB j;
""")
        uid = w.catalog.get_job("default", "j").uid
        server._reconcile()  # starts it
        runner = server.manager.runners[uid]
        wait_for(lambda: not runner.is_alive(), 120, "the job to fail (topic missing)")
        assert w.catalog.get_job("default", "j").status == JobStatus.FAILED

        w.run("START STREAMJOB j;")  # a client starts it again before the next pass
        server._reconcile()
        assert uid in server.manager.runners, "the START was taken for the failure seen"
        again = server.manager.runners[uid]
        assert again is not runner
    finally:
        server.manager.stop_all(graceful=False)
        w.catalog.unregister_server(server.server_id)
        w.close()
