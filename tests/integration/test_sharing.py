"""Many active servers share the jobs (issue 33, DESIGN §8), with real processes: three
``streamjob server --share`` on one PostgreSQL catalog (each declaring cores and
memory; one with its own ``--spark-master``), :data:`N_JOBS` small jobs, one Kafka
topic, then a fourth server.

One life of a catalog (one scenario, shared setup; ``slow``):

* the jobs spread within one of even, each under a lease of its own (epoch 1), the
  servers' capacity and what their jobs need in ``status``;
* SIGKILL of one server: its jobs' leases expire after the TTL (6 s) and the two others
  restart them from their last checkpoints (a new epoch), still within one of even;
* SIGSTOP of another past its leases: the last server takes its jobs; SIGCONT: the
  frozen server fences them at once and writes nothing (no run of its stays open, no
  row lands twice);
* rebalancing: the thawed server runs nothing, the last one all: jobs move to it at
  checkpoint boundaries (a graceful stop, a start at a new epoch) until even within one;
* a fourth server joins: jobs move to it likewise until the three are even within one;
  the moves and the lost leases are counted apart (``status``, ``/metrics``);
* every job's sink, read with pandas, holds each fed record exactly once from where it
  started to the last one fed: nothing lost, nothing doubled.

Helpers (process groups, output lines, the feeder, the catalog reads) are
tests/integration/test_server.py's.
"""

from __future__ import annotations

import json
import signal
import time
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from .test_server import JOB_SQL, env as env  # noqa: F401 - the fixture
from .test_server import wait_for

pytestmark = pytest.mark.system
#: Seconds this module takes on a fast host (four sharing servers, about 140 s on a loaded host): the slow tier hands it out
#: among the first (tests/conftest.py), so the run does not end on it.
EXPECTED_S = 140

TTL = 6000  # a TTL this loaded two-core machine keeps without spurious fences
#: The jobs: the issue asks for 30; each job costs a Kafka source's Python process and
#: about 100 MiB, and on this loaded two-core host 6 keep the scenario near its former
#: time (4 jobs: about 4 minutes) with every step still exercised (two moves per join).
N_JOBS = 6
NAMES = [f"s{i}" for i in range(N_JOBS)]
#: Each server's declared capacity: room for every job (placement then spreads by load).
CAPACITY = ("--cores", str(2 * N_JOBS), "--memory", f"{256 * N_JOBS}m")


def _even(counts: Counter, servers) -> bool:
    """True if the jobs are spread within one of even over ``servers``."""
    loads = [counts.get(s.id, 0) for s in servers]
    return sum(loads) == N_JOBS and max(loads) - min(loads) <= 1


def _owners(env) -> dict[str, str | None]:
    return {n: env.job(n).owner for n in NAMES}


def _sink_ids(env, name: str) -> pd.DataFrame:
    from streamjob.connectors.files.table import committed_files

    rows = [json.loads(line)
            for f in committed_files(str(env.home / "warehouse" / "default" / f"{name}_out"))
            for line in Path(f).read_text().splitlines() if line.strip()]
    return pd.DataFrame(rows, columns=["id", "v"])


@pytest.mark.slow
@pytest.mark.parametrize("env", ["postgresql"], indirect=True)
def test_three_servers_share_the_jobs_through_a_kill_a_freeze_and_a_join(env):
    servers = [env.server("--share", "--lease-ttl", str(TTL), *CAPACITY,
                          *(["--spark-master", "local[1]"] if i == 0 else []))
               for i in range(3)]
    for s in servers:
        s.wait_line(r": ready for its share of the jobs", 120)
    servers[0].wait_line(r"job manager on local\[1\]", 5)
    assert {s.server_id for s in env.catalog.share_servers(TTL)} == {s.id for s in servers}
    feeder = env.feed()
    env.submit("".join(JOB_SQL.format(topic=env.topic, bootstrap=env.bootstrap, job=n)
                       for n in NAMES))

    # (a) spread within one of even, each job under its own lease at epoch 1
    ids = {s.id for s in servers}
    wait_for(lambda: all(env.job(n).status == "RUNNING" and env.job(n).owner in ids
                         for n in NAMES), 240, "every job running on a sharing server")
    counts = Counter(_owners(env).values())
    assert _even(counts, servers), counts
    leases = {i.job_uid: i for i in env.catalog.job_leases()}
    assert {(i.epoch, i.live) for i in leases.values()} == {(1, True)}
    from streamjob.status import status_snapshot

    shown = {s["server_id"]: s for s in status_snapshot(env.catalog)["servers"]}
    for s in servers:
        assert (shown[s.id]["cores"], shown[s.id]["cores_used"]) == (2 * N_JOBS, counts[s.id])
        assert shown[s.id]["memory_used_mb"] == 128 * counts[s.id]
    assert shown[servers[0].id]["spark_master"] == "local[1]"
    before = {n: max(env.wait_checkpoint_beyond(n, -1, 120)) for n in NAMES}

    # (b) SIGKILL: the dead server's jobs resume on the two others from their checkpoints
    dead = max(servers, key=lambda s: counts[s.id])  # one with the most jobs
    b, c = [s for s in servers if s is not dead]
    lost = [n for n, o in _owners(env).items() if o == dead.id]
    dead.kill()
    t0 = time.monotonic()
    wait_for(lambda: all(env.job(n).owner in (b.id, c.id) and env.job(n).status == "RUNNING"
                         for n in lost), 90, f"{lost} restarted on the others")
    seen = env.wait_batches_beyond({n: before[n] for n in lost}, 90)
    print(f"\n{len(lost)} jobs committed a checkpoint on another server "
          f"{time.monotonic() - t0:.1f} s after SIGKILL (TTL {TTL / 1000:.0f} s)")
    assert all(min(seen[n]) > before[n] for n in lost)
    counts = Counter(_owners(env).values())
    assert _even(counts, (b, c)), counts
    by_uid = {i.job_uid: i for i in env.catalog.job_leases()}
    for n in lost:
        info = by_uid[env.job(n).uid]
        assert info.epoch >= 2 and info.reason == "orphaned", info

    # (c) SIGSTOP past the leases: c takes b's jobs; thawed, b fences them and writes nothing
    frozen = [n for n, o in _owners(env).items() if o == b.id]
    marks = {n: max(env.checkpoint_ids(n)) for n in frozen}
    b.signal(signal.SIGSTOP)
    try:
        wait_for(lambda: all(env.job(n).owner == c.id and env.job(n).status == "RUNNING"
                             for n in frozen), 90, f"{frozen} taken over by {c.id}")
        env.wait_batches_beyond(marks, 90)
    finally:
        b.signal(signal.SIGCONT)
    for n in frozen:
        b.wait_line(rf"streamjob default\.{n}: .*\(fenced\)", 30)
    after = {n: max(env.checkpoint_ids(n)) for n in frozen}
    env.wait_batches_beyond(after, 60)

    # (d) b, thawed, runs nothing while c runs them all: c hands jobs over at checkpoint
    # boundaries (a graceful stop, then a start on b at a new epoch) until even within one
    wait_for(lambda: _even(Counter(_owners(env).values()), (b, c))
             and all(env.job(n).status == "RUNNING" for n in NAMES), 180,
             "the jobs rebalanced onto the thawed server")
    moved = [n for n, o in _owners(env).items() if o == b.id]
    for n in moved:
        c.wait_line(rf"streamjob default\.{n}: moving to a server with fewer jobs", 5)
        b.wait_line(rf"streamjob default\.{n} started \(lease epoch \d+, released\)", 5)
    env.wait_batches_beyond({n: max(env.checkpoint_ids(n)) for n in moved}, 90)
    for n in NAMES:
        runs = env.catalog.list_runs(env.job(n).uid)
        assert len([r for r in runs if r.ended_at is None]) == 1, (n, runs)
    assert b.proc.poll() is None  # the fenced server lives on, sharing again
    assert "Traceback" not in b.output, b.output

    # (e) a fourth server joins: jobs move to it at checkpoint boundaries until even
    d = env.server("--share", "--lease-ttl", str(TTL), *CAPACITY)
    d.wait_line(r": ready for its share of the jobs", 120)
    wait_for(lambda: _even(Counter(_owners(env).values()), (b, c, d))
             and all(env.job(n).status == "RUNNING" for n in NAMES), 240,
             "the jobs rebalanced onto the fourth server")
    joined = [n for n, o in _owners(env).items() if o == d.id]
    for n in joined:
        d.wait_line(rf"streamjob default\.{n} started \(lease epoch \d+, released\)", 5)
    env.wait_batches_beyond({n: max(env.checkpoint_ids(n)) for n in joined}, 90)
    placed = status_snapshot(env.catalog)["placement"]
    assert placed["moves"] >= len(moved) + len(joined), placed
    assert placed["lease_losses"] >= len(lost) + len(frozen), placed
    assert placed["waiting"] == {}, placed
    from streamjob.api.metrics import metrics_text

    body = metrics_text(env.catalog)[0].decode()
    for n in joined:
        assert f'streamjob_job_moves_total{{job="default.{n}"}}' in body
    assert "streamjob_job_lease_losses_total" in body

    # (f) every sink against the input: each record exactly once, none missing at the end
    feeder.stop()
    last = {p: max(i for i in range(feeder.sent) if i % 2 == p) for p in (0, 1)}
    wait_for(lambda: all(_sink_ids(env, n)["id"].isin(list(last.values())).sum() == 2
                         for n in NAMES), 120, "every job caught up with the feeder")
    for n in NAMES:
        got = _sink_ids(env, n).sort_values("id").reset_index(drop=True)
        first = {p: got[got["id"] % 2 == p]["id"].min() for p in (0, 1)}
        expected = pd.DataFrame(
            [{"id": i, "v": f"r{i}"} for i in range(feeder.sent) if i >= first[i % 2]])
        pd.testing.assert_frame_equal(got, expected.sort_values("id").reset_index(drop=True),
                                      check_dtype=False, obj=f"sink of {n}")
    for s in (b, c, d):
        s.terminate()
        assert s.wait_exit(120) == 0, s.output
    assert not [i for i in env.catalog.job_leases() if i.live], "leases released at exit"
