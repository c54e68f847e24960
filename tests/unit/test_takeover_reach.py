"""A sharing server does not take over a job whose checkpoints it cannot reach (issue 33
point 4): two servers on one catalog (SQLite, PostgreSQL) whose checkpoint roots are
different local directories, as two machines' local disks would be. The one that does
not see the job's checkpoint identity refuses it, with the reason in its log and in the
job's lease row, and placement passes it over; the one that sees it takes the job.
Without Spark: :class:`streamjob.manager.share.Share` and the rule
:func:`streamjob.checkpoint.identity.takeover_refusal`."""

from __future__ import annotations

import datetime as dt
import logging
import threading

import pytest

from streamjob.catalog import Catalog
from streamjob.catalog.records import ShareServer
from streamjob.checkpoint import identity
from streamjob.home import CHECKPOINT_DIR_KEY, Home
from streamjob.manager.share import Share, checkpoint_refusal

pytestmark = pytest.mark.component

A, B = "host-a:101:aaaaaaaa", "host-b:202:bbbbbbbb"
TTL_MS = 3000


def _job_with_checkpoints(cat: Catalog, home: Home):
    """A job whose checkpoints are recorded and whose directory (under ``home``'s root)
    holds its identity, as a run on that server leaves them."""
    cat.create_job("default", "j", "insert into t select * from s", {}, [],
                   check_dependencies=False)
    job = cat.get_job("default", "j")
    now = dt.datetime.now(dt.timezone.utc)
    cat.record_checkpoint(job.uid, 3, started_at=now, ended_at=now, duration_ms=1,
                          source_offsets={}, input_rows=1, retained=3)
    identity.prepare(home.checkpoint_dir("default", "j"), job, None)  # a first start
    return job


def _share(cat: Catalog, sid: str, home: Home, said: list[str]) -> Share:
    return Share(cat, sid, TTL_MS, 500, 0.2, None, None, on_lost=lambda uid, why: None,
                 echo=said.append, refusal=lambda job: checkpoint_refusal(cat, home, job))


def test_a_server_that_cannot_reach_the_checkpoints_refuses_the_job(catalog_url, tmp_path,
                                                                    caplog):
    homes = {sid: Home.open(tmp_path / f"home-{n}", {CHECKPOINT_DIR_KEY: str(tmp_path / f"disk-{n}")},
                            catalog_url=catalog_url) for n, sid in (("a", A), ("b", B))}
    with Catalog(catalog_url) as cat:
        for sid in (A, B):
            cat.register_server(sid, "h", 1, "local[1]")
            cat.declare_share(sid, None)
        job = _job_with_checkpoints(cat, homes[A])  # ran on A: its disk holds them
        said: dict[str, list[str]] = {A: [], B: []}
        shares = {sid: _share(cat, sid, homes[sid], said[sid]) for sid in (A, B)}
        started: list[str] = []
        stopping = threading.Event()
        try:
            for s in shares.values():
                s.leases.open(cat)
            # B cannot see A's disk: refused, said in its log and in the lease row
            with caplog.at_level(logging.WARNING, logger="streamjob.manager.share"):
                assert shares[B].take(job, None, lambda j: started.append(B), stopping) is None
            assert started == [] and not shares[B].holds(job.uid)
            reason = cat.job_leases()[0].refusals[B]
            assert "holds no streamjob.json" in reason and str(tmp_path / "disk-b") in reason
            assert any("refuses to take streamjob default.j" in r.getMessage()
                       for r in caplog.records)
            assert any("refuses to take it" in line for line in said[B])
            assert cat.job_leases()[0].holder is None  # nobody holds it
            from streamjob.status import status_snapshot

            shown = {s["server_id"]: s["refused"] for s in status_snapshot(cat)["servers"]}
            assert shown == {A: {}, B: {"default.j": reason}}
            from rich.console import Console

            from streamjob.client.render import status_view

            console = Console(width=400, record=True)
            console.print(status_view(status_snapshot(cat)))
            assert "refuses default.j: its checkpoints are recorded" in console.export_text()
            # placement passes B over for this job, even with the most room
            servers = [ShareServer(A, None, frozenset(), ("x1", "x2")),
                       ShareServer(B, None, frozenset(), ())]
            refused = {lease.job_uid: lease.refusals for lease in cat.job_leases()}
            assert shares[A].to_start([job], servers, refused) == [job]
            assert shares[B].to_start([job], servers, refused) == []
            # A reaches them: it takes the job, and the refusals are cleared
            assert shares[A].take(job, cat.job_leases()[0], lambda j: started.append(A),
                                  stopping) == 1
            assert started == [A]
            lease = cat.job_leases()[0]
            assert lease.holder == A and lease.refusals == {} and lease.reason == "new"
        finally:
            for s in shares.values():
                s.leases.release(job.uid)


def test_the_takeover_rule(tmp_path):
    """:func:`identity.takeover_refusal`: no recorded checkpoints, nothing to reach; else
    the directory's identity must be the job's."""
    root = str(tmp_path / "ck")
    d = f"{root}/default/j"
    assert identity.takeover_refusal(d, root, "U", recorded=False) is None
    assert "holds no streamjob.json" in identity.takeover_refusal(d, root, "U", recorded=True)
    job = type("J", (), {"uid": "U", "qualified_name": "default.j", "name": "j"})()
    identity.prepare(d, job, None)
    assert identity.takeover_refusal(d, root, "U", recorded=True) is None
    assert "belongs to another job" in identity.takeover_refusal(d, root, "V", recorded=True)
    (tmp_path / "ck" / "default" / "j" / identity.FILE_NAME).write_text("{not json")
    assert "cannot be read" in identity.takeover_refusal(d, root, "U", recorded=True)
