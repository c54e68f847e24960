"""The job manager lease as an object (:class:`streamjob.manager.lease.Lease`, issue 29)
on a real catalog (SQLite, PostgreSQL), without Spark: one holder at a time, a standby
names the holder, and a holder whose renewals fail fences itself before its lease
expires, after which the standby takes it."""

from __future__ import annotations

import threading

import pytest

from streamjob.catalog import Catalog
from streamjob.catalog.models import MANAGER_LEASE
from streamjob.exceptions import CatalogError
from streamjob.manager.lease import Lease

pytestmark = pytest.mark.component

A, B = "host-a:101:aaaaaaaa", "host-b:202:bbbbbbbb"
TTL_MS, RENEW_MS = 1500, 300


class Holder:
    """A lease and what its hooks saw: its echo lines, taken/lost events; ``outage``
    set makes its heartbeat fail as an unreachable catalog would."""

    def __init__(self, catalog: Catalog, server_id: str) -> None:
        self.lines: list[str] = []
        self.taken, self.lost, self.outage = threading.Event(), threading.Event(), threading.Event()
        self.shutdown = threading.Event()
        self.lease = Lease(catalog, server_id, TTL_MS, RENEW_MS, heartbeat=self._heartbeat,
                           on_taken=self.taken.set, on_lost=self._on_lost,
                           shutdown=self.shutdown, echo=self.lines.append)
        self.server_id = server_id

    def _heartbeat(self, cat: Catalog) -> None:
        if self.outage.is_set():
            raise CatalogError("the catalog does not answer (test)")
        if not cat.heartbeat(self.server_id):
            cat.register_server(self.server_id, "host", 1, "local[1]")

    def _on_lost(self):
        self.lost.set()
        return [], 2  # no query threads to wait for; "2 jobs" stopped


@pytest.fixture
def holders(catalog_url):
    with Catalog(catalog_url) as cat:
        a, b = Holder(cat, A), Holder(cat, B)
        for h in (a, b):
            h.lease.open()
        yield a, b
        for h in (a, b):
            h.lease.stop()
            h.lease.close()


def test_one_holder_and_a_standby_that_names_it(holders):
    a, b = holders
    assert a.lease.name == MANAGER_LEASE
    a.lease.renew()
    b.lease.renew()
    assert a.lease.held and a.taken.is_set() and not b.lease.held
    assert a.lines == [f"server {A}: active (holds the job manager lease)"]
    b.lease.note_standby()
    b.lease.note_standby()  # once per holder
    assert b.lines == [f"standby: server {A} holds the lease"]
    with a.lease.guard():  # the holder's work under the lease: it is not lost meanwhile
        assert a.lease.held


def test_a_holder_that_cannot_renew_fences_itself_and_the_standby_takes_over(holders):
    a, b = holders
    a.lease.renew()
    b.lease.renew()
    a.lease.start()
    b.lease.start()
    a.outage.set()
    assert a.lost.wait(TTL_MS / 1000 + 2), "the holder did not fence itself"
    assert not a.lease.held
    assert a.lines[-1] == (f"server {A}: the lease could not be renewed in time: "
                           "stopped 2 job(s) at once (fenced)")
    assert b.taken.wait(TTL_MS / 1000 + 5), "the standby did not take the expired lease"
    assert b.lease.held and not a.lease.held
