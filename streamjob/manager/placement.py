"""Placement of jobs on sharing servers (issue 33, DESIGN §8): which server runs a new
or orphaned job.

Every sharing server computes the same placement from the same catalog read (servers
ordered by id, jobs in catalog order) and takes the leases of the jobs placed on
itself. A job may go to a server whose labels include the job's
``streamjob.placement.labels`` and that has room for it: a job place under
``--max-jobs``, and the job's driver cores and memory (``streamjob.placement.cores``,
``streamjob.placement.memory``: :func:`job_need`) under the server's ``--cores`` and
``--memory`` less what the jobs it holds need (a capacity not declared is unlimited).
Of those, the server with the fewest jobs wins, then the one with the most room: the
most free job places, then free cores, then free memory (MiB), then the smallest id;
each placement counts at once, so the jobs of one read spread evenly. The load comes
first so that placement and rebalancing (:meth:`.share.Share.to_move`: until the
loads are even within one job) agree: a server that declared no capacity has unlimited
room, and were room first it would win every job, and every job moved off it would be
placed back on it. A server that
refused a job (it cannot reach the job's checkpoints, :mod:`.share`) is passed over
for it; a job no server can take gets the reason (:func:`why_unplaced`). Two servers
that read at different moments may both pick themselves: the lease's compare-and-set
(:mod:`streamjob.catalog.placement`) lets exactly one win. (Kubernetes' scheduler
filters nodes by requested cores and memory, then scores the free capacity; Flink's
slot allocation spreads likewise.)
"""

from __future__ import annotations

from typing import Iterable, Mapping, NamedTuple, Sequence

from ..catalog.placement import parse_labels
from ..catalog.records import JobInfo, ShareServer

__all__ = ["DEFAULT_NEED", "LABELS_PROPERTY", "Need", "fits", "job_labels", "job_need", "parse_memory",
           "place",
           "why_unplaced"]

#: The job property naming the labels a server must have to run the job.
LABELS_PROPERTY = "streamjob.placement.labels"


def job_labels(job: JobInfo) -> frozenset[str]:
    """The labels job ``job`` asks for: its effective ``streamjob.placement.labels`` (job
    properties, else the session's ``SET``), lower-cased; empty when unset or invalid
    (the property is checked when the job is created)."""
    from .. import properties as jp
    from ..exceptions import StreamJobError

    try:
        return parse_labels(jp.values(job.properties or {},
                                      job.session_properties or {}).placement_labels)
    except StreamJobError:
        return frozenset()


class Need(NamedTuple):
    """What a job's driver needs on a sharing server: ``cores`` and ``memory_mb`` (MiB)."""

    cores: int = 1
    memory_mb: int = 128


#: The need of a job placement knows nothing of (the properties' defaults).
DEFAULT_NEED = Need()


def parse_memory(text: str) -> int:
    """A memory size as Spark writes it (``512m``, ``4g``, ``1t``; a bare number is
    MiB) in MiB. Raises ValueError naming the text."""
    import re

    m = re.fullmatch(r"\s*(\d+)\s*([kmgt]?)i?b?\s*", str(text).lower())
    if m is None:
        raise ValueError(f"'{text}' is not a memory size (512m, 4g, or MiB)")
    n, unit = int(m.group(1)), m.group(2) or "m"
    return {"k": n // 1024, "m": n, "g": n * 1024, "t": n * 1024 * 1024}[unit]


def job_need(job: JobInfo) -> Need:
    """The driver cores and memory (MiB) job ``job`` needs: its effective
    ``streamjob.placement.cores`` and ``streamjob.placement.memory`` (job properties,
    else the session's ``SET``, else the defaults 1 core and 128 MiB); the defaults
    when a value is invalid (the properties are checked when the job is created)."""
    from .. import properties as jp
    from ..exceptions import StreamJobError

    try:
        props = jp.values(job.properties or {}, job.session_properties or {})
    except StreamJobError:
        return DEFAULT_NEED
    return Need(int(props.placement_cores), int(props.placement_memory_mb))


class _Room:
    """A server's free capacity during one placement (jobs, cores, MiB; inf: no limit)."""

    def __init__(self, server: ShareServer, needs: Mapping[str, Need]) -> None:
        held = [needs.get(uid, DEFAULT_NEED) for uid in server.jobs]
        inf = float("inf")
        self.load = len(server.jobs)
        self.jobs = inf if server.max_jobs is None else server.max_jobs - self.load
        self.cores = inf if server.cores is None else server.cores - sum(n.cores for n in held)
        self.memory = inf if server.memory_mb is None else \
            server.memory_mb - sum(n.memory_mb for n in held)

    def short(self, need: Need) -> str | None:
        """What is missing for ``need`` (``"job places"``, ``"cores"``, ``"memory"``)."""
        if self.jobs < 1:
            return "job places"
        if self.cores < need.cores:
            return "cores"
        if self.memory < need.memory_mb:
            return "memory"
        return None

    def take(self, need: Need) -> None:
        self.load += 1
        self.jobs -= 1
        self.cores -= need.cores
        self.memory -= need.memory_mb


def place(jobs: Sequence[tuple[str, frozenset[str]]],
          servers: Iterable[ShareServer],
          refused: Mapping[str, Iterable[str]] | None = None,
          needs: Mapping[str, Need] | None = None) -> dict[str, str | None]:
    """Place ``jobs`` (``(uid, labels)`` in order) on ``servers``; returns ``{uid:
    server id}``, None for a job no server can take (labels missing, no room, or every
    eligible server refused it). ``refused``: ``{uid: server ids}`` that refused the
    job (its checkpoints are not reachable from them, issue 33 point 4). ``needs``:
    ``{uid: Need}`` of the jobs to place and of those the servers hold (a uid missing
    needs :data:`DEFAULT_NEED`).

    Pure: the servers' loads are their held ``jobs`` plus the placements made here.
    """
    refused = refused or {}
    needs = needs or {}
    servers = sorted(servers, key=lambda s: s.server_id)
    rooms = {s.server_id: _Room(s, needs) for s in servers}
    out: dict[str, str | None] = {}
    for uid, labels in jobs:
        need = needs.get(uid, DEFAULT_NEED)
        best, key = None, None
        for s in servers:
            room = rooms[s.server_id]
            if not labels <= s.labels or s.server_id in set(refused.get(uid, ())) \
                    or room.short(need) is not None:
                continue
            k = (room.load, -room.jobs, -room.cores, -room.memory, s.server_id)
            if key is None or k < key:
                best, key = s.server_id, k
        out[uid] = best
        if best is not None:
            rooms[best].take(need)
    return out


def fits(server: ShareServer, labels: frozenset[str], need: Need,
         needs: Mapping[str, Need]) -> bool:
    """True if ``server`` could take one more job asking ``labels`` and ``need``
    (``needs``: of the jobs it holds, as for :func:`place`)."""
    return labels <= server.labels and _Room(server, needs).short(need) is None


def why_unplaced(labels: frozenset[str], need: Need, servers: Iterable[ShareServer],
                 needs: Mapping[str, Need] | None = None,
                 refused: Iterable[str] = ()) -> str:
    """Why no server of ``servers`` can take a job asking ``labels`` and ``need`` (for
    ``streamjob status``): ``"no sharing server has labels gpu"``, or what each
    eligible server lacks (``"a: cores (2 free, needs 4)"``), or the refusals."""
    needs = needs or {}
    servers = list(servers)
    wanted = ",".join(sorted(labels)) or "none"
    eligible = [s for s in servers if labels <= s.labels]
    if not servers:
        return "no live sharing server"
    if not eligible:
        return f"no live sharing server has labels {wanted}"
    refused = set(refused)
    parts = []
    for s in sorted(eligible, key=lambda s: s.server_id):
        if s.server_id in refused:
            parts.append(f"{s.server_id}: refused it (its checkpoints are not reachable)")
            continue
        room = _Room(s, needs)
        short = room.short(need)
        if short == "job places":
            parts.append(f"{s.server_id}: full ({s.max_jobs} jobs)")
        elif short == "cores":
            parts.append(f"{s.server_id}: {max(0, room.cores):g} cores free, needs {need.cores}")
        elif short == "memory":
            parts.append(f"{s.server_id}: {max(0, room.memory):g} MiB free, "
                         f"needs {need.memory_mb} MiB")
    return "no sharing server has room: " + "; ".join(parts) if parts else \
        "placed by another server's read (waits for the next pass)"
