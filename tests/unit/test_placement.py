"""Placement of jobs on sharing servers (issue 33): most room first, labels, no room,
and the same answer from every server (pure: :func:`streamjob.manager.placement.place`)."""

from __future__ import annotations

import pytest

from streamjob.catalog.records import ShareServer
from streamjob.manager.placement import place

pytestmark = pytest.mark.unit

NONE = frozenset()


def _srv(sid, max_jobs=None, labels=(), jobs=()):
    return ShareServer(server_id=sid, max_jobs=max_jobs, labels=frozenset(labels),
                       jobs=tuple(jobs))


def test_jobs_spread_evenly_within_one():
    servers = [_srv("c"), _srv("a", jobs=["x1"]), _srv("b")]
    out = place([(f"j{i}", NONE) for i in range(8)], servers)
    counts = {s: list(out.values()).count(s) for s in "abc"}
    counts["a"] += 1
    assert max(counts.values()) - min(counts.values()) <= 1, counts
    assert sum(counts.values()) == 9
    # the same read gives the same answer on every server, in any listing order
    assert place([(f"j{i}", NONE) for i in range(8)], list(reversed(servers))) == out


def test_most_room_wins_and_a_full_server_takes_nothing():
    servers = [_srv("a", max_jobs=2, jobs=["x"]), _srv("b", max_jobs=4), _srv("c", max_jobs=0)]
    out = place([("j1", NONE), ("j2", NONE), ("j3", NONE), ("j4", NONE), ("j5", NONE),
                 ("j6", NONE)], servers)
    assert out["j1"] == "b" and "c" not in out.values()
    assert list(out.values()).count("a") == 1 and list(out.values()).count("b") == 4
    assert out["j6"] is None  # 1 + 4 places taken: no room left


def test_labels_restrict_the_eligible_servers():
    servers = [_srv("a", labels=["gpu", "eu"]), _srv("b", labels=["eu"]), _srv("c")]
    out = place([("g", frozenset({"gpu"})), ("e1", frozenset({"eu"})),
                 ("e2", frozenset({"eu"})), ("x", frozenset({"us"}))], servers)
    assert out["g"] == "a" and out["x"] is None
    assert {out["e1"], out["e2"]} == {"a", "b"} or out["e1"] == out["e2"] == "b"
    assert out["e1"] in ("a", "b") and out["e2"] in ("a", "b")


def test_a_job_asks_for_labels_by_its_property_or_the_sessions(tmp_path):
    from streamjob.catalog import Catalog
    from streamjob.manager.placement import job_labels

    with Catalog(f"sqlite:///{tmp_path}/catalog.db") as cat:
        sql = "insert into t select * from s"
        cat.create_job("default", "a", sql, {"streamjob.placement.labels": "GPU, eu"}, [],
                       check_dependencies=False)
        cat.create_job("default", "b", sql, {}, [], check_dependencies=False)
        assert job_labels(cat.get_job("default", "a")) == {"gpu", "eu"}
        assert job_labels(cat.get_job("default", "b")) == frozenset()


def test_a_server_hands_a_job_over_while_another_runs_two_fewer(tmp_path):
    """Rebalancing (issue 33): one move at a time, only to a server that could take the
    job (labels, room), never while a job waits for a server, and none once even
    within one."""
    from streamjob.catalog import Catalog
    from streamjob.manager.share import Share

    with Catalog(f"sqlite:///{tmp_path}/catalog.db") as cat:
        sql = "insert into t select * from s"
        for name, props in (("a", {}), ("b", {}), ("g", {"streamjob.placement.labels": "gpu"})):
            cat.create_job("default", name, sql, props, [], check_dependencies=False)
        jobs = [cat.get_job("default", n) for n in "abg"]
        share = Share(cat, "me", 3000, 1000, 1.0, None, None, on_lost=lambda u, w: None,
                      echo=lambda line: None)
        mine = tuple(j.uid for j in jobs)
        joined = _srv("new")
        moved = share.to_move(jobs, [_srv("me", jobs=mine), joined], waiting=False)
        assert moved is not None and moved.name in ("a", "b")  # "new" has no gpu label
        assert share.to_move(jobs, [_srv("me", jobs=mine), joined], waiting=True) is None
        assert share.to_move(jobs, [_srv("me", jobs=mine), _srv("new", jobs=["x"])],
                             waiting=False) is not None  # 3 against 1: two fewer
        even = [_srv("me", jobs=mine), _srv("new", jobs=["x", "y"])]
        assert share.to_move(jobs, even, waiting=False) is None
        full = [_srv("me", jobs=mine), _srv("new", max_jobs=0)]
        assert share.to_move(jobs, full, waiting=False) is None
        gpu_only = [_srv("me", jobs=mine), _srv("new", labels=["gpu"], jobs=["x"])]
        assert share.to_move([jobs[2]], gpu_only, waiting=False).name == "g"
        assert share.to_move(jobs, [_srv("other", jobs=["x"])], waiting=False) is None  # not sharing
