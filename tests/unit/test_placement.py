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


def _cap(sid, cores=None, memory_mb=None, jobs=(), max_jobs=None, labels=()):
    return ShareServer(server_id=sid, max_jobs=max_jobs, labels=frozenset(labels),
                       jobs=tuple(jobs), cores=cores, memory_mb=memory_mb)


def test_cores_and_memory_bound_a_server_and_the_most_free_wins():
    from streamjob.manager.placement import Need

    needs = {"held": Need(2, 512), "big": Need(3, 128), "fat": Need(1, 4096),
             "s1": Need(1, 128), "s2": Need(1, 128)}
    servers = [_cap("a", cores=4, memory_mb=1024, jobs=["held"]),
               _cap("b", cores=2, memory_mb=2048), _cap("c", cores=5, memory_mb=2048)]
    jobs = [("big", NONE), ("fat", NONE), ("s1", NONE), ("s2", NONE), ("s3", NONE)]
    out = place(jobs, servers, needs=needs)
    assert out["big"] == "c"        # a and b have 2 free cores: only c fits 3
    assert out["fat"] is None       # 4096 MiB: more than any server's memory
    # then c and b have 2 cores free, a 2: equal cores, the most free memory wins (b,
    # 2048 MiB), then c (1920 MiB), then a (512 MiB)
    assert (out["s1"], out["s2"], out["s3"]) == ("b", "c", "a"), out
    assert place(jobs, list(reversed(servers)), needs=needs) == out


def test_a_server_without_declared_memory_takes_any_memory_need():
    from streamjob.manager.placement import Need

    out = place([("fat", NONE)], [_cap("a", memory_mb=1024), _cap("b", cores=2)],
                needs={"fat": Need(1, 4096)})
    assert out["fat"] == "b"


def test_the_reason_a_job_waits_names_what_each_server_lacks():
    from streamjob.manager.placement import Need, why_unplaced

    needs = {"x": Need(2, 256), "y": Need(1, 900)}
    servers = [_cap("a", cores=3, jobs=["x"]), _cap("b", memory_mb=1024, jobs=["y"]),
               _cap("c", max_jobs=1, jobs=["z"]), _cap("g", labels=["gpu"], cores=0)]
    why = why_unplaced(NONE, Need(2, 256), servers, needs, refused=["g"])
    assert why == ("no sharing server has room: a: 1 cores free, needs 2; "
                   "b: 124 MiB free, needs 256 MiB; c: full (1 jobs); "
                   "g: refused it (its checkpoints are not reachable)"), why
    assert why_unplaced(frozenset({"eu"}), Need(), servers) == \
        "no live sharing server has labels eu"
    assert why_unplaced(NONE, Need(), []) == "no live sharing server"


def test_a_job_asks_for_cores_and_memory_by_its_properties(tmp_path):
    from streamjob.catalog import Catalog
    from streamjob.exceptions import StreamJobError
    from streamjob.manager.placement import Need, job_need, parse_memory

    with Catalog(f"sqlite:///{tmp_path}/catalog.db") as cat:
        sql = "insert into t select * from s"
        cat.create_job("default", "a", sql, {"streamjob.placement.cores": "2",
                                             "streamjob.placement.memory": "512"}, [],
                       check_dependencies=False)
        cat.create_job("default", "b", sql, {}, [], check_dependencies=False)
        assert job_need(cat.get_job("default", "a")) == Need(2, 512)
        assert job_need(cat.get_job("default", "b")) == Need(1, 128)  # the defaults
    from streamjob import properties as jp

    with pytest.raises(StreamJobError):
        jp.values({"streamjob.placement.cores": "-1"})
    assert [parse_memory(t) for t in ("512m", "4g", "2048", "1 GiB", "1t")] == \
        [512, 4096, 2048, 1024, 1024 * 1024]
    with pytest.raises(ValueError, match="'lots' is not a memory size"):
        parse_memory("lots")


def test_a_servers_spark_master_comes_from_its_flag_else_its_labels_else_spark_master():
    from streamjob.exceptions import StreamJobError
    from streamjob.manager.share import label_masters, spark_master

    conf = {"spark.master": "local[2]",
            "streamjob.placement.masters": "gpu=spark://gpu-head:7077; EU = local[1,2]"}
    assert spark_master(conf, "spark://mine:7077", "gpu") == "spark://mine:7077"
    assert spark_master(conf, None, "eu,gpu") == "local[1,2]"  # first label by name
    assert spark_master(conf, None, "gpu, x") == "spark://gpu-head:7077"
    assert spark_master(conf, None, "x") == "local[2]"
    assert spark_master(conf, None, None) == "local[2]"
    assert label_masters(None) == {}
    with pytest.raises(StreamJobError, match="pair 2 'eu' is not label=master"):
        label_masters("gpu=local[1]; eu")


def test_rebalancing_moves_a_job_only_to_a_server_with_room_for_its_needs(tmp_path):
    from streamjob.catalog import Catalog
    from streamjob.manager.share import Share

    with Catalog(f"sqlite:///{tmp_path}/catalog.db") as cat:
        sql = "insert into t select * from s"
        for name in "abc":
            cat.create_job("default", name, sql, {"streamjob.placement.cores": "2"}, [],
                           check_dependencies=False)
        jobs = [cat.get_job("default", n) for n in "abc"]
        share = Share(cat, "me", 3000, 1000, 1.0, None, None, on_lost=lambda u, w: None,
                      echo=lambda line: None, cores=6)
        assert "cores 6" in share.describe() and "memory unlimited" in share.describe()
        mine = tuple(j.uid for j in jobs)
        assert share.to_move(jobs, [_cap("me", cores=6, jobs=mine), _cap("new", cores=1)],
                             waiting=False) is None  # 1 core: no room for 2
        assert share.to_move(jobs, [_cap("me", cores=6, jobs=mine), _cap("new", cores=2)],
                             waiting=False) is not None
        with pytest.raises(ValueError):
            Share(cat, "me", 3000, 1000, 1.0, None, None, on_lost=lambda u, w: None,
                  echo=lambda line: None, memory_mb=-1)


def test_a_job_moved_off_a_server_is_never_placed_back_on_it(tmp_path):
    """A walk of the guide's "A second machine" (2026-11-28): a server without declared
    capacity (unlimited room) and one with --cores 2 --memory 1g. Room came first in
    placement, so the unlimited one won every job, rebalancing handed one to the other
    (three against none), placement gave it straight back, and the two jobs moved 78
    times in a minute. Placement now weighs the load first, and a move is only made
    where placement puts the released job elsewhere."""
    from streamjob.catalog import Catalog
    from streamjob.manager.placement import Need
    from streamjob.manager.share import Share

    with Catalog(f"sqlite:///{tmp_path}/catalog.db") as cat:
        sql = "insert into t select * from s"
        for name, props in (("s0", {}), ("enrich", {"streamjob.placement.memory": "1024"}),
                            ("scoring", {"streamjob.placement.labels": "gpu"})):
            cat.create_job("default", name, sql, props, [], check_dependencies=False)
        jobs = [cat.get_job("default", n) for n in ("s0", "enrich", "scoring")]
        needs = {j.uid: n for j, n in zip(jobs, (Need(1, 128), Need(1, 1024), Need(1, 128)))}
        # three jobs orphaned at once: spread, the labelled one on the gpu server
        free = [_cap("gpu", labels=["gpu"]), _cap("small", cores=2, memory_mb=1024)]
        out = place([(j.uid, frozenset({"gpu"}) if j.name == "scoring" else NONE)
                     for j in jobs], free, needs=needs)
        assert out[jobs[2].uid] == "gpu"
        assert sorted(out.values()) == ["gpu", "gpu", "small"], out
        # all three on the gpu server (it took them while the other was away)
        share = Share(cat, "gpu", 3000, 1000, 1.0, None, None, on_lost=lambda u, w: None,
                      echo=lambda line: None)
        held = [_cap("gpu", labels=["gpu"], jobs=[j.uid for j in jobs]),
                _cap("small", cores=2, memory_mb=1024)]
        moved = share.to_move(jobs, held, waiting=False, needs=needs)
        assert moved is not None and moved.name != "scoring"
        released = [_cap("gpu", labels=["gpu"], jobs=[j.uid for j in jobs if j is not moved]),
                    held[1]]
        assert place([(moved.uid, NONE)], released, needs=needs)[moved.uid] == "small"
        # two against one: even within one, nothing moves
        after = [_cap("gpu", labels=["gpu"], jobs=[j.uid for j in jobs if j is not moved]),
                 _cap("small", cores=2, memory_mb=1024, jobs=[moved.uid])]
        assert share.to_move([j for j in jobs if j is not moved], after, waiting=False,
                             needs=needs) is None
