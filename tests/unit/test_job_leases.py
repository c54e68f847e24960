"""A sharing server's job leases as an object (:class:`streamjob.manager.job_leases.
JobLeases`, issue 33) on a real catalog (SQLite, PostgreSQL), without Spark: renewals
keep them, a lease taken by another server after an outage fences its job on the old
holder, and the old holder's epoch no longer renews or releases."""

from __future__ import annotations

import threading
import time

import pytest

from streamjob.catalog import Catalog
from streamjob.exceptions import CatalogError
from streamjob.manager.job_leases import JobLeases

pytestmark = pytest.mark.component

A, B = "host-a:101:aaaaaaaa", "host-b:202:bbbbbbbb"
TTL_MS, RENEW_MS = 1500, 300


class Outage(Catalog):
    """A catalog clone whose renewals fail while ``down`` is set."""

    down = threading.Event()

    def renew_job_leases(self, *a, **kw):
        if self.down.is_set():
            raise CatalogError("the catalog does not answer (test)")
        return super().renew_job_leases(*a, **kw)


@pytest.fixture
def cat(catalog_url):
    with Catalog(catalog_url) as c:
        for sid in (A, B):
            c.register_server(sid, "h", 1, "local[1]")
            c.declare_share(sid, None)
        yield c


def test_renewals_keep_a_lease_and_an_outage_fences_the_job_before_it_expires(cat, catalog_url):
    assert cat.create_job("default", "j", "insert into t select * from s", {}, [],
                          check_dependencies=False)
    uid = cat.get_job("default", "j").uid
    lost: list[tuple[str, float]] = []
    gone = threading.Event()
    leases = JobLeases(cat, A, TTL_MS, RENEW_MS,
                       on_lost=lambda u, why: (lost.append((u, time.monotonic())), gone.set()))
    own = Outage(catalog_url)
    leases.open(own)  # the renewals' connection, failing on demand
    Outage.down.clear()
    leases.start()
    try:
        assert leases.acquire(uid, 15_000) == 1
        time.sleep(TTL_MS / 1000 * 2)  # past one TTL: only renewals keep it
        assert leases.holds(uid) and not lost
        info = cat.job_leases()[0]
        assert info.live and info.holder == A
        Outage.down.set()
        t0 = time.monotonic()
        assert gone.wait(10)
        fenced_at = lost[0][1]
        # fenced before the lease could expire in the catalog: B cannot have it yet
        assert fenced_at - t0 < TTL_MS / 1000
        assert cat.acquire_job_lease(uid, B, TTL_MS, 15_000) in (None, 2)
        deadline = time.monotonic() + 10
        while cat.acquire_job_lease(uid, B, TTL_MS, 15_000) is None:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert cat.job_leases()[0].holder == B and cat.job_leases()[0].epoch == 2
        Outage.down.clear()
        assert not leases.holds(uid) and leases.losses == 1
        leases.release(uid, 1)  # the old epoch: B's lease stays
        assert cat.job_leases()[0].holder == B
    finally:
        leases.stop()
        leases.close()


def test_a_renewal_that_finds_another_holder_fences_at_once(cat):
    assert cat.create_job("default", "j", "insert into t select * from s", {}, [],
                          check_dependencies=False)
    uid = cat.get_job("default", "j").uid
    lost = []
    leases = JobLeases(cat, A, TTL_MS, RENEW_MS, on_lost=lambda u, why: lost.append(why))
    assert leases.acquire(uid, 15_000) == 1
    assert cat.release_job_lease(uid, A, 1)  # as if it expired ...
    assert cat.acquire_job_lease(uid, B, TTL_MS, 15_000) == 2  # ... and B took it
    leases.renew()
    assert lost == ["another server took its lease"] and leases.held() == {}
