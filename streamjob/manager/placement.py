"""Placement of jobs on sharing servers (issue 33, DESIGN §8): which server runs a new
or orphaned job.

Every sharing server computes the same placement from the same catalog read (servers
ordered by id, jobs in catalog order) and takes the leases of the jobs placed on
itself: a job goes to the eligible server (its labels include the job's
``streamjob.placement.labels``) with the most room (``--max-jobs`` minus the jobs it
holds; no limit counts as infinite room), then the fewest jobs, then the smallest id;
each placement counts at once, so the jobs of one read spread evenly. A server that
refused a job (it cannot reach the job's checkpoints, :mod:`.share`) is passed over for
it. Two servers that
read at different moments may both pick themselves: the lease's compare-and-set
(:mod:`streamjob.catalog.placement`) lets exactly one win. (Kubernetes' scheduler and
Flink's slot allocation spread by free capacity likewise.)
"""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from ..catalog.placement import parse_labels
from ..catalog.records import JobInfo, ShareServer

__all__ = ["LABELS_PROPERTY", "job_labels", "place"]

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


def place(jobs: Sequence[tuple[str, frozenset[str]]],
          servers: Iterable[ShareServer],
          refused: Mapping[str, Iterable[str]] | None = None) -> dict[str, str | None]:
    """Place ``jobs`` (``(uid, labels)`` in order) on ``servers``; returns ``{uid:
    server id}``, None for a job no server can take (labels missing, no room, or every
    eligible server refused it). ``refused``: ``{uid: server ids}`` that refused the
    job (its checkpoints are not reachable from them, issue 33 point 4).

    Pure: the servers' loads are their held ``jobs`` plus the placements made here.
    """
    refused = refused or {}
    servers = sorted(servers, key=lambda s: s.server_id)
    load: dict[str, int] = {s.server_id: len(s.jobs) for s in servers}
    out: dict[str, str | None] = {}
    for uid, labels in jobs:
        best, key = None, None
        for s in servers:
            if not labels <= s.labels or s.server_id in set(refused.get(uid, ())):
                continue
            room = float("inf") if s.max_jobs is None else s.max_jobs - load[s.server_id]
            if room <= 0:
                continue
            k = (-room, load[s.server_id], s.server_id)
            if key is None or k < key:
                best, key = s.server_id, k
        out[uid] = best
        if best is not None:
            load[best] += 1
    return out
