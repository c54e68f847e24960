"""The job managers' catalog API (revision 0005) on SQLite and PostgreSQL: servers and
heartbeats, the manager lease, job owner and progress, and the change notifications a
job manager waits on (:class:`~streamjob.catalog.watch.CatalogWatcher`)."""

from __future__ import annotations

import math
import threading
import time
from datetime import datetime, timezone

import pytest

from streamjob.catalog import Catalog, ServerInfo

pytestmark = pytest.mark.component

A, B = "host-a:101:aaaaaaaa", "host-b:202:bbbbbbbb"


@pytest.fixture
def cat(catalog_url):
    with Catalog(catalog_url) as c:
        yield c


def _until(predicate, timeout: float, what: str, interval: float = 0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout} s waiting for {what}")


def _job(cat: Catalog, name: str = "j") -> str:
    assert cat.create_job("default", name, "insert into t select * from s", {}, [],
                          check_dependencies=False)
    return cat.get_job("default", name).uid


def test_register_heartbeat_list_unregister(cat):
    before = datetime.now(timezone.utc)
    cat.register_server(A, "host-a", 101, "local[2]")
    cat.register_server(B, "host-b", 202, "spark://m:7077")
    servers = cat.list_servers()
    assert [s.server_id for s in servers] == [A, B]
    a = servers[0]
    assert isinstance(a, ServerInfo)
    assert (a.host, a.pid, a.spark_master) == ("host-a", 101, "local[2]")
    assert a.started_at.tzinfo is not None and a.heartbeat_at >= a.started_at
    assert abs((a.started_at - before).total_seconds()) < 60  # the database's clock on PG
    time.sleep(0.01)
    assert cat.heartbeat(A) is True
    assert cat.list_servers()[0].heartbeat_at > a.heartbeat_at
    assert cat.heartbeat("nobody:1:00000000") is False
    cat.register_server(A, "host-a", 303, "local[4]")  # again: updated, not duplicated
    assert [(s.pid, s.spark_master) for s in cat.list_servers()] == [(303, "local[4]"),
                                                                      (202, "spark://m:7077")]
    cat.unregister_server(A)
    cat.unregister_server("nobody:1:00000000")
    assert [s.server_id for s in cat.list_servers()] == [B]
    with pytest.raises(ValueError, match="invalid server id"):
        cat.register_server("x" * 65, "h", 1, "local")


def test_lease_is_held_by_one_server_until_it_expires(cat):
    cat.register_server(A, "host-a", 101, "local[2]")
    cat.register_server(B, "host-b", 202, "local[2]")
    assert cat.lease_holder() is None
    assert cat.acquire_lease(A, 60_000) is True
    assert cat.acquire_lease(B, 60_000) is False
    assert cat.acquire_lease(A, 2000) is True  # renewed, now with a short TTL
    holder = cat.lease_holder()
    assert holder is not None and holder.server_id == A and holder.host == "host-a"
    assert cat.acquire_lease(B, 60_000) is False
    _until(lambda: cat.lease_holder() is None, 10, "the lease to expire")
    assert cat.acquire_lease(B, 60_000) is True  # expired: B takes it
    assert cat.acquire_lease(A, 60_000) is False
    assert cat.lease_holder().server_id == B
    cat.release_lease(A)  # not A's: nothing happens
    assert cat.lease_holder().server_id == B
    cat.release_lease(B)
    assert cat.lease_holder() is None
    assert cat.acquire_lease(A, 60_000) is True  # free: taken at once


def test_lease_remaining_ms_tells_a_standby_when_to_take_over(cat):
    """lease_remaining_ms (the database's clock) is 0 for a free lease, at most the TTL
    for a held one, and once that long has passed the lease can be taken (issue 19: a
    standby tries at the holder's expiry, not at its next renewal period)."""
    assert cat.lease_remaining_ms() == 0
    assert cat.acquire_lease(A, 60_000)
    assert 0 < cat.lease_remaining_ms() <= 60_000
    assert cat.acquire_lease(A, 1500)  # renewed with a short TTL
    left = cat.lease_remaining_ms()
    assert 0 < left <= 1500
    assert cat.acquire_lease(B, 60_000) is False
    deadline = time.monotonic() + left / 1000 + 0.005  # what the standby waits
    _until(lambda: time.monotonic() >= deadline, 10, "the lease's expiry")
    assert cat.lease_remaining_ms() == 0
    assert cat.acquire_lease(B, 60_000) is True
    cat.release_lease(B)
    assert cat.lease_remaining_ms() == 0


def test_unregister_releases_the_lease_and_unknown_holder_is_no_holder(cat):
    cat.register_server(A, "host-a", 101, "local[2]")
    assert cat.acquire_lease(A, 60_000)
    cat.unregister_server(A)
    assert cat.lease_holder() is None
    assert cat.acquire_lease(B, 60_000)  # B never registered: it holds, but nobody to show
    assert cat.lease_holder() is None
    cat.register_server(B, "host-b", 202, "local[2]")
    assert cat.lease_holder().server_id == B


@pytest.mark.parametrize("ttl", [0, -5, 1.5, True])
def test_acquire_lease_refuses_a_bad_ttl(cat, ttl):
    with pytest.raises(ValueError, match="ttl_ms must be a positive int"):
        cat.acquire_lease(A, ttl)


def test_servers_racing_for_the_lease_one_wins(cat):
    clones = [cat.clone() for _ in range(6)]
    ids = [f"h:{i}:0000000{i}" for i in range(len(clones))]
    barrier = threading.Barrier(len(clones))
    results: dict[str, bool] = {}

    def race(c: Catalog, sid: str) -> None:
        barrier.wait(30)
        results[sid] = c.acquire_lease(sid, 60_000)

    threads = [threading.Thread(target=race, args=a) for a in zip(clones, ids)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for c in clones:
        c.close()
    winners = [sid for sid, won in results.items() if won]
    assert len(results) == len(ids) and len(winners) == 1, results
    cat.register_server(winners[0], "h", 1, "local")
    assert cat.lease_holder().server_id == winners[0]


def test_prune_removes_dead_servers_but_not_the_live_holder(cat):
    cat.register_server(A, "host-a", 101, "local[2]")
    cat.register_server(B, "host-b", 202, "local[2]")
    assert cat.acquire_lease(A, 60_000)
    time.sleep(1.5)
    cat.heartbeat(B)
    # A's heartbeat is old but it holds a live lease; B is fresh
    assert cat.prune_servers(1000) == []
    cat.release_lease(A)
    assert cat.prune_servers(1000) == [A]
    assert [s.server_id for s in cat.list_servers()] == [B]
    assert cat.heartbeat(A) is False  # pruned: it must register again
    with pytest.raises(ValueError):
        cat.prune_servers(0)


def test_job_owner_follows_the_unchanged_pattern(cat):
    uid = _job(cat)
    assert cat.get_job("default", "j").owner is None
    assert cat.update_job("default", "j", status="STARTING", owner=A).owner == A
    assert cat.update_job("default", "j", status="RUNNING").owner == A  # not given: kept
    assert cat.update_job("default", "j", owner=B, uid="other") is None  # another incarnation
    assert cat.get_job_by_uid(uid).owner == A
    assert [j.owner for j in cat.list_jobs()] == [A]
    assert cat.update_job("default", "j", status="STOPPED", owner=None).owner is None


def test_release_jobs_clears_one_owner(cat):
    _job(cat, "a")
    _job(cat, "b")
    _job(cat, "c")
    cat.update_job("default", "a", owner=A)
    cat.update_job("default", "b", owner=A)
    cat.update_job("default", "c", owner=B)
    assert cat.release_jobs(A) == 2
    assert [(j.name, j.owner) for j in cat.list_jobs()] == [("a", None), ("b", None), ("c", B)]
    assert cat.release_jobs(A) == 0


def test_progress_round_trip_without_touching_updated_at(cat):
    uid = _job(cat)
    before = cat.get_job("default", "j")
    assert before.progress == {}
    progress = {"batch_id": 7, "input_rows_per_s": 1200.5, "processed_rows_per_s": 3000.0,
                "lag_records": 42, "last_checkpoint_at": "2026-01-02T03:04:05+00:00",
                "updated_at": "2026-01-02T03:04:06+00:00"}
    cat.update_progress(uid, progress)
    after = cat.get_job("default", "j")
    assert after.progress == progress
    assert after.updated_at == before.updated_at
    assert cat.list_jobs()[0].progress == progress and cat.get_job_by_uid(uid).progress == progress
    cat.update_progress(uid, {"batch_id": 8, "lag_records": None})
    assert cat.get_job("default", "j").progress == {"batch_id": 8, "lag_records": None}
    cat.update_progress("gone", {"batch_id": 1})  # a dropped job: ignored
    with pytest.raises(ValueError, match="not JSON-serializable"):
        cat.update_progress(uid, {"at": object()})
    with pytest.raises(ValueError, match="must be a mapping"):
        cat.update_progress(uid, [1, 2])
    cat.update_progress(uid, {})
    assert cat.get_job("default", "j").progress == {}


def test_end_open_runs(cat):
    uid = _job(cat)
    first = cat.start_run(uid, 1)
    cat.end_run(first, "FAILED", "boom")
    cat.start_run(uid, 2)
    assert cat.end_open_runs(uid, "FAILED", "the job manager running it died") == 1
    runs = cat.list_runs(uid)
    assert [(r.status, r.cause) for r in runs] == [
        ("FAILED", "boom"), ("FAILED", "the job manager running it died")]
    assert all(r.ended_at is not None for r in runs)
    assert cat.end_open_runs(uid) == 0 and cat.end_open_runs("gone") == 0
    with pytest.raises(ValueError):
        cat.end_open_runs(uid, "RUNNING")


def test_a_catalog_in_another_schema_does_not_wake_the_watcher(pg_admin):
    """PostgreSQL NOTIFY channels are per database: two catalogs in two schemas of one
    database share one. Each notification names its schema, and a watcher wakes for its
    own catalog only. Before, a write in any schema woke every watcher (found as a flaky
    `wait(0.5) is False` in the test below while another xdist worker wrote)."""
    import uuid

    from sqlalchemy import text
    from sqlalchemy.engine import make_url

    from .conftest import PG_URL

    schemas = [f"sj_test_{uuid.uuid4().hex[:12]}" for _ in range(2)]
    with pg_admin.begin() as conn:
        for schema in schemas:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    mine, theirs = (Catalog(make_url(PG_URL).update_query_dict(
        {"options": f"-csearch_path={schema}"}).render_as_string(hide_password=False))
        for schema in schemas)
    watcher = mine.watcher(poll_s=0.3)
    try:
        assert watcher.wait(0) is True and watcher.listening  # the LISTEN connection opened
        while watcher.wait(0.2):  # other tests' notifications, if any
            pass
        _job(theirs)
        assert watcher.wait(1.0) is False  # another schema's job: not ours
        _job(mine)
        assert watcher.wait(10) is True
    finally:
        watcher.close()
        mine.close()
        theirs.close()
        with pg_admin.begin() as conn:
            for schema in schemas:
                conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))


def test_watcher_wakes_on_catalog_changes_not_on_progress(cat, catalog_url):
    other = Catalog(catalog_url)  # another client
    watcher = cat.watcher(poll_s=0.3)
    try:
        if cat.dialect == "sqlite":
            t0 = time.monotonic()
            assert watcher.wait() is False  # polls: the whole interval, quietly
            assert time.monotonic() - t0 >= 0.25
            assert not watcher.listening
        else:
            assert watcher.wait(0) is True  # the LISTEN connection opened: look once
            assert watcher.listening
            while watcher.wait(0.2):  # notifications of other tests' schemas, if any
                pass
            uid = _job(other)
            assert watcher.wait(10) is True
            for write in (lambda: other.update_job("default", "j", desired_state="RUNNING"),
                          lambda: other.create_stream("default", "s", [], {}),
                          lambda: other.drop_stream("default", "s"),
                          lambda: other.drop_job("default", "j")):
                t0 = time.monotonic()
                write()
                assert watcher.wait(10) is True
                assert time.monotonic() - t0 < 5
            uid = _job(other, "k")
            assert watcher.wait(10) is True
            other.register_server(A, "h", 1, "local")
            other.update_progress(uid, {"batch_id": 1})
            other.heartbeat(A)
            other.start_run(uid, 1)
            assert watcher.wait(0.5) is False  # servers, progress, heartbeats, runs: quiet
            other.acquire_lease(A, 60_000)  # a new holder notifies
            assert watcher.wait(10) is True
        # wake() ends a wait at once, from another thread
        threading.Timer(0.1, watcher.wake).start()
        t0 = time.monotonic()
        assert watcher.wait(30) is True
        assert time.monotonic() - t0 < 5
    finally:
        watcher.close()
        other.close()


def test_progress_of_a_batch_report():
    """What the job manager writes from Spark's progress report (manager/progress.py):
    lag is the Kafka records beyond the batch's end offsets, over every partition."""
    from types import SimpleNamespace as Report

    from streamjob.manager.progress import lag_of, progress_of

    kafka = Report(endOffset='{"t": {"0": 10, "1": 7}}', latestOffset='{"t": {"0": 15, "1": 7}}')
    added = Report(endOffset={"t": {"0": 3}}, latestOffset={"t": {"0": 3, "1": 4}})  # new partition
    rate = Report(endOffset="42", latestOffset=None)
    assert lag_of([kafka]) == 5
    assert lag_of([kafka, added, rate]) == 9
    assert lag_of([rate]) is None and lag_of([]) is None
    assert lag_of([Report(endOffset='{"t": {"0": 9}}', latestOffset='{"t": {"0": 5}}')]) == 0
    report = Report(batchId=12, inputRowsPerSecond=float("nan"), processedRowsPerSecond=250.12345,
                    sources=[kafka])
    progress = progress_of(report)
    assert progress["batch_id"] == 12 and progress["lag_records"] == 5
    # a rate Spark could not measure (NaN: a run's first batch) is unknown, not 0 (issue 16)
    assert progress["input_rows_per_s"] is None and progress["processed_rows_per_s"] == 250.123
    assert datetime.fromisoformat(progress["updated_at"]).tzinfo is not None


PROGRESS_JSON = (  # what Spark 4.3 wrote for a batch of a real job (NaN rates left out)
    '{"id":"b3b44401-9775-40b9-b3bb-fa605aea3581","runId":"035dc836-adb0-41f3-9519-037bbee51536",'
    '"name":"default.j0","timestamp":"2026-11-21T10:56:48.001Z","batchId":3,"batchDuration":322,'
    '"numInputRows":28,"processedRowsPerSecond":87.0,"durationMs":{"addBatch":225,'
    '"triggerExecution":322},"stateOperators":[{"operatorName":"stateStoreSave","numRowsTotal":5,'
    '"numRowsUpdated":2,"allUpdatesTimeMs":1,"numRowsRemoved":0,"allRemovalsTimeMs":0,'
    '"commitTimeMs":3,"memoryUsedBytes":100,"numRowsDroppedByWatermark":0,'
    '"numShufflePartitions":2,"numStateStoreInstances":2}],"sources":[{"description":"kafka",'
    '"startOffset":null,"endOffset":{"ev":{"0":180,"1":179}},"latestOffset":{"ev":{"0":185,'
    '"1":179}},"numInputRows":28,"processedRowsPerSecond":87.0}],'
    '"sink":{"description":"FileSink[file:/tmp/out]","numOutputRows":-1},'
    '"observedMetrics":{"malformed:default.s":{"malformed":2}}}')


def test_progress_reports_cross_py4j_as_json():
    """The checkpoint recorder reads Spark's progress report from its JSON (one py4j
    call instead of dozens); everything the recorder and the progress reporter use
    survives, NaN rates that Spark leaves out included."""
    from streamjob.spark.listener import _progress_from_json, merge_offsets
    from streamjob.spark.observe import malformed_counts
    from streamjob.manager.progress import progress_of

    p = _progress_from_json(PROGRESS_JSON)
    assert (p.batchId, p.batchDuration, p.numInputRows) == (3, 322, 28)
    assert p.timestamp == "2026-11-21T10:56:48.001Z"
    assert math.isnan(p.inputRowsPerSecond) and math.isnan(p.sources[0].inputRowsPerSecond)
    assert [op.numRowsTotal for op in p.stateOperators] == [5]
    assert merge_offsets([(s.description, s.endOffset) for s in p.sources]) == {
        "ev": {"0": 180, "1": 179}}
    assert malformed_counts(p) == {"default.s": 2}
    report = progress_of(p)
    assert (report["batch_id"], report["lag_records"], report["input_rows_per_s"]) == (3, 5, None)
