"""The job leases of sharing servers (issue 33, revision 0012) on SQLite and PostgreSQL:
acquire/renew/release with a TTL and a compare-and-set on the fencing epoch, the share a
server declares, and two servers racing for one job (exactly one wins)."""

from __future__ import annotations

import threading
import time

import pytest

from streamjob.catalog import Catalog
from streamjob.catalog.placement import parse_labels

pytestmark = pytest.mark.component

A, B, S = "host-a:101:aaaaaaaa", "host-b:202:bbbbbbbb", "host-s:303:cccccccc"
LIVE = 15_000


@pytest.fixture
def cat(catalog_url):
    with Catalog(catalog_url) as c:
        for sid in (A, B):
            c.register_server(sid, sid.split(":")[0], 1, "local[2]")
            c.declare_share(sid, None)
        yield c


def _job(cat: Catalog, name: str = "j") -> str:
    assert cat.create_job("default", name, "insert into t select * from s", {}, [],
                          check_dependencies=False)
    return cat.get_job("default", name).uid


def _until(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    pytest.fail(f"timed out waiting for {what}")


def test_acquire_renew_release_and_the_epoch(cat):
    uid = _job(cat)
    assert cat.acquire_job_lease(uid, A, 60_000, LIVE) == 1
    assert cat.get_job_by_uid(uid).owner == A
    assert cat.acquire_job_lease(uid, B, 60_000, LIVE) is None  # A's lease is live
    assert cat.acquire_job_lease(uid, A, 60_000, LIVE) == 1     # A again: same epoch
    assert cat.renew_job_leases(A, 60_000, {uid: 1}) == {uid}
    assert cat.renew_job_leases(B, 60_000, {uid: 1}) == set()  # not B's
    (info,) = cat.job_leases()
    assert (info.holder, info.epoch, info.live, info.reason) == (A, 1, True, "new")
    assert info.remaining_ms > 50_000
    assert cat.release_job_lease(uid, A, epoch=2) is False  # the CAS: wrong epoch
    assert cat.release_job_lease(uid, A, epoch=1) is True
    assert cat.job_leases()[0].holder is None
    assert cat.acquire_job_lease(uid, B, 60_000, LIVE) == 2
    assert cat.job_leases()[0].reason == "released"
    assert cat.get_job_by_uid(uid).owner == B


def test_an_expired_lease_is_taken_at_a_new_epoch_and_the_old_holder_cannot_renew(cat):
    uid = _job(cat)
    assert cat.acquire_job_lease(uid, A, 1000, LIVE) == 1
    _until(lambda: not cat.job_leases()[0].live, 5, "A's lease to expire")
    assert cat.acquire_job_lease(uid, B, 60_000, LIVE) == 2
    assert cat.job_leases()[0].reason == "orphaned"
    # A comes back: its renewal at epoch 1 fails, so its runner is fenced
    assert cat.renew_job_leases(A, 60_000, {uid: 1}) == set()
    assert cat.release_job_lease(uid, A, 1) is False
    # and if A took it back later, its old epoch still fails the compare-and-set
    assert cat.release_job_lease(uid, B) is True
    assert cat.acquire_job_lease(uid, A, 60_000, LIVE) == 3
    assert cat.renew_job_leases(A, 60_000, {uid: 1}) == set()
    assert cat.renew_job_leases(A, 60_000, {uid: 3}) == {uid}


def test_a_job_hosted_by_a_live_process_without_share_is_left_to_it(cat):
    uid = _job(cat)
    cat.register_server(S, "host-s", 303, "local[2]")  # a shell or classic server
    assert cat.claim_job(uid, S, LIVE) is None
    assert cat.acquire_job_lease(uid, A, 60_000, LIVE) is None
    assert cat.acquire_job_lease(uid, A, 60_000, LIVE, presumed_dead=(S,)) == 1
    assert cat.acquire_job_lease(_job(cat, "gone"), A, 60_000, LIVE) == 1
    cat.drop_job("default", "gone")
    assert [i.job_uid for i in cat.job_leases()] == [uid]  # a dropped job's lease is not shown
    assert cat.acquire_job_lease("0" * 32, A, 60_000, LIVE) is None  # no such job


def test_share_servers_count_live_leases_and_labels(cat):
    cat.declare_share(B, 3, ["GPU", " eu ", ""])
    u1, u2 = _job(cat, "j1"), _job(cat, "j2")
    assert cat.acquire_job_lease(u1, A, 60_000, LIVE) == 1
    assert cat.acquire_job_lease(u2, B, 60_000, LIVE) == 1
    by_id = {s.server_id: s for s in cat.share_servers(LIVE)}
    assert set(by_id) == {A, B}
    assert by_id[A].jobs == (u1,) and by_id[A].room == float("inf")
    assert by_id[B].labels == {"gpu", "eu"} and by_id[B].room == 2
    cat.register_server(S, "host-s", 303, "local[2]")  # not sharing: not listed
    assert S not in {s.server_id for s in cat.share_servers(LIVE)}
    assert cat.sharing_server_ids() == {A, B}
    with pytest.raises(ValueError):
        cat.declare_share(A, -1)
    assert parse_labels("a, B,,c ") == {"a", "b", "c"}


def test_two_servers_racing_for_one_job_exactly_one_wins(cat):
    uids = [_job(cat, f"r{i}") for i in range(8)]
    other = cat.clone()
    won: dict[str, list[str]] = {A: [], B: []}
    barrier = threading.Barrier(2)

    def race(c: Catalog, sid: str) -> None:
        barrier.wait()
        for uid in uids:
            if c.acquire_job_lease(uid, sid, 60_000, LIVE) is not None:
                won[sid].append(uid)

    try:
        threads = [threading.Thread(target=race, args=(c, sid))
                   for c, sid in ((cat, A), (other, B))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    finally:
        other.close()
    assert sorted(won[A] + won[B]) == sorted(uids)  # every job once, none twice
    assert {i.job_uid: i.holder for i in cat.job_leases()} == {
        **{u: A for u in won[A]}, **{u: B for u in won[B]}}


def test_an_expired_lease_of_a_live_sharing_server_is_left_until_it_releases_it(cat):
    """The holder lives (its heartbeat is fresh): it fenced the job and releases the
    lease once the query stopped; until then nobody else starts the job. A holder that
    stopped beating (dead, frozen) loses it."""
    uid = _job(cat)
    assert cat.acquire_job_lease(uid, A, 1000, LIVE) == 1
    _until(lambda: not cat.job_leases()[0].live, 5, "A's lease to expire")
    assert cat.heartbeat(A)
    assert cat.acquire_job_lease(uid, B, 60_000, LIVE, holder_live_ms=60_000) is None
    assert cat.release_job_lease(uid, A, 1)  # A's query stopped
    assert cat.acquire_job_lease(uid, B, 60_000, LIVE, holder_live_ms=60_000) == 2
    # B stops beating: once its heartbeat is older than holder_live_ms, A may take it
    assert cat.release_job_lease(uid, B, 2) and cat.acquire_job_lease(uid, B, 1000, LIVE) == 3
    _until(lambda: not cat.job_leases()[0].live, 5, "B's lease to expire")
    time.sleep(0.3)
    assert cat.acquire_job_lease(uid, A, 60_000, LIVE, holder_live_ms=200) == 4


def test_status_and_metrics_show_the_servers_and_their_jobs(cat):
    """``streamjob status`` / ``/v1/status`` list the live sharing servers with the jobs
    each runs; ``/metrics`` has jobs per server and each job's lease takeovers."""
    import socket

    from rich.console import Console

    from streamjob.api.metrics import metrics_text
    from streamjob.client.render import status_view
    from streamjob.status import status_snapshot

    uid = _job(cat)
    cat.register_server(A, socket.gethostname(), 101, "local[2]")  # A: this host, pid 101
    cat.declare_share(A, 4, ["eu"])
    assert cat.acquire_job_lease(uid, A, 60_000, LIVE) == 1
    assert cat.release_job_lease(uid, A, 1) and cat.acquire_job_lease(uid, B, 60_000, LIVE) == 2
    servers = {s["server_id"]: s for s in status_snapshot(cat)["servers"]}
    assert servers[B]["jobs"] == ["default.j"] and servers[A]["jobs"] == []
    assert (servers[A]["max_jobs"], servers[A]["labels"]) == (4, ["eu"])
    console = Console(width=200, record=True)
    console.print(status_view(status_snapshot(cat)))
    text = console.export_text()
    assert "servers: " in text and "host-b:1 (1 job: default.j)" in text, text
    assert "(0 jobs of 4)" in text, text
    body = metrics_text(cat)[0].decode()
    assert f'streamjob_server_jobs{{server="{servers[B]["label"]}"}} 1.0' in body
    assert 'streamjob_job_lease_takeovers_total{job="default.j"} 1.0' in body


def test_capacity_moves_lease_losses_and_waiting_reasons_in_status_and_metrics(cat):
    """A server's declared cores and memory are stored and shown with what its jobs
    need; a hand-over and a lost lease are counted apart (``/metrics``:
    ``streamjob_job_moves_total``, ``streamjob_job_lease_losses_total``); a job no
    server can take shows why in ``status``."""
    from rich.console import Console

    from streamjob.api.metrics import metrics_text
    from streamjob.client.render import status_view
    from streamjob.status import status_snapshot

    cat.declare_share(A, None, (), cores=4, memory_mb=1024)
    with pytest.raises(ValueError):
        cat.declare_share(B, None, (), cores=-1)
    uid = _job(cat)
    big = cat.create_job("default", "big", "insert into t select * from s",
                         {"streamjob.placement.cores": "8"}, [], check_dependencies=False)
    assert big
    big_uid = cat.get_job("default", "big").uid
    cat.update_job("default", "big", desired_state="RUNNING")
    assert cat.acquire_job_lease(uid, A, 60_000, LIVE) == 1
    by_id = {s.server_id: s for s in cat.share_servers(LIVE)}
    assert (by_id[A].cores, by_id[A].memory_mb, by_id[B].cores) == (4, 1024, None)
    servers = {s["server_id"]: s for s in status_snapshot(cat)["servers"]}
    assert (servers[A]["cores"], servers[A]["cores_used"]) == (4, 1)
    assert (servers[A]["memory_mb"], servers[A]["memory_used_mb"]) == (1024, 128)
    # a move, then a loss: counted apart
    assert cat.release_job_lease(uid, A, 1, moved=True)
    assert cat.acquire_job_lease(uid, B, 1000, LIVE) == 2
    _until(lambda: not cat.job_leases()[0].live, 5, "B's lease to expire")
    assert cat.acquire_job_lease(uid, A, 60_000, LIVE) == 3
    lease = next(x for x in cat.job_leases() if x.job_uid == uid)
    assert (lease.moves, lease.losses) == (1, 1)
    assert cat.set_job_waiting(big_uid, "no sharing server has room: a: 3 cores free, needs 8")
    placement = status_snapshot(cat)["placement"]
    assert (placement["moves"], placement["lease_losses"]) == (1, 1)
    body = metrics_text(cat)[0].decode()
    assert 'streamjob_job_moves_total{job="default.j"} 1.0' in body
    assert 'streamjob_job_lease_losses_total{job="default.j"} 1.0' in body
    assert "streamjob_server_cores{" in body and "streamjob_server_memory_bytes{" in body
    assert placement["waiting"] == {
        "default.big": "no sharing server has room: a: 3 cores free, needs 8"}
    console = Console(width=200, record=True)
    console.print(status_view(status_snapshot(cat)))
    text = console.export_text()
    assert "default.big waits: no sharing server has room" in text, text
    assert "cores 1/4, memory 128/1024 MiB" in text, text
    # taking the lease clears the reason
    assert cat.acquire_job_lease(big_uid, B, 60_000, LIVE) == 1
    assert status_snapshot(cat)["placement"]["waiting"] == {}
    # a sharing server's hand-over (Share.ended(moved=True)) counts a move
    from streamjob.manager.share import Share

    share = Share(cat, A, 60_000, 1000, 1.0, None, None, on_lost=lambda u, w: None,
                  echo=lambda line: None)
    share.leases.open()
    try:
        assert cat.release_job_lease(big_uid, B)
        assert share.leases.acquire(big_uid, LIVE) == 2
        share.ended(big_uid, moved=True)
    finally:
        share.leases.close()
    lease = next(x for x in cat.job_leases() if x.job_uid == big_uid)
    assert (lease.holder, lease.moves, lease.losses) == (None, 1, 0)


def test_a_lease_in_its_last_millisecond_is_still_live():
    """CI of 2026-11-28 (test_capacity_moves_... [sqlite]): a test waited until
    ``job_leases()`` said the lease was not live, and ``acquire_job_lease`` then refused
    it: ``live`` was ``remaining_ms > 0``, whole milliseconds, so in the last
    millisecond before the expiry it said expired while acquire (expiry after now)
    still refused. One rule for both now."""
    from datetime import datetime, timedelta, timezone

    from streamjob.catalog.models import JobLease
    from streamjob.catalog.placement import _lease_info

    now = datetime(2026, 11, 28, 15, 0, tzinfo=timezone.utc)
    row = JobLease(job_uid="u", epoch=2, holder="host-b:1:b", reason="new",
                   expires_at=now + timedelta(microseconds=400))
    info = _lease_info(row, now)
    assert info.live and info.remaining_ms == 0
    assert not _lease_info(row, now + timedelta(microseconds=400)).live
