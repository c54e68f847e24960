"""A query switch's new checkpoint epoch, finished (issue 30 point 5; docs/upgrades.md,
"A switch killed midway"): ``ALTER STREAMJOB j AS (...) FROM EARLIEST | FROM TIMESTAMP t``
and ``... WITH STATE RESET`` switch the query and record, in the switch's own
transaction, the epoch still to be prepared (a pending switch of the ``start_over``
phase: ``Catalog.replace_job_query``). :func:`finish_start_over` prepares it and ends
the pending switch; ALTER calls it right after the switch, START STREAMJOB before it
starts the job, and a server for a switch whose process is gone
(:func:`streamjob.manager.liveness.resume_abandoned_switches`, given it by
streamjob/cli/server.py).
"""

from __future__ import annotations

import datetime as dt
import os
import socket

START_OVER = "start_over"
"""The phase of a pending switch whose query switched and whose new epoch is to come."""


def switcher(manager=None) -> dict:
    """The process doing a switch, as its pending switch names it: ``{"host", "pid",
    "owner" (``manager``'s server id or None), "at" (ISO time, UTC)}``
    (:func:`streamjob.manager.liveness.switch_abandoned` judges whether it is gone)."""
    return {"host": socket.gethostname(), "pid": os.getpid(),
            "owner": getattr(manager, "owner", None) if manager is not None else None,
            "at": dt.datetime.now(dt.timezone.utc).isoformat()}


def start_over_intent(start_from: str, run: bool, manager=None) -> dict:
    """The pending switch a switch to a new checkpoint epoch leaves in its transaction:
    ``{"phase": "start_over", "start_from" ("earliest", ms as text, or Kafka offsets as
    JSON text), "run" (the job ran before the switch: it runs once the epoch is
    prepared), "host", "pid", "owner", "at"}`` (the catalog adds ``"version"``)."""
    return {"phase": START_OVER, "start_from": start_from, "run": bool(run),
            **switcher(manager)}


def pending_start_over(job) -> dict | None:
    """``job``'s pending switch if it is a start over still to be finished, else None."""
    marker = job.pending_switch
    return marker if marker and marker.get("phase") == START_OVER else None


def finish_start_over(executor, job) -> str:
    """Prepare the new checkpoint epoch ``job``'s pending start over names (its checkpoint
    records, directory and sink markers removed; :meth:`JobStatements._new_epoch`), then,
    in one catalog transaction, end the pending switch and, if the job ran before the
    switch, set its desired state RUNNING (compare-and-set on the marker's ``at``:
    ``Catalog.resume_switch``). Killed midway, it can run again: nothing ran on an
    epoch prepared before the marker was cleared. Returns the result's phrase `` over
    from ... (checkpoint epoch e; ...)``, or "" when nothing was pending.

    Raises:
        CheckpointError: the checkpoint directory is another job's or has no identity
            (the pending switch stays; the error says what to do).
        ValidationError and the planner's errors: the job's query no longer plans.
    """
    marker = pending_start_over(job)
    if marker is None:
        return ""
    plan = executor._plan(job.database, job.name, job.query, job.properties,
                          job.session_properties)
    epoch = executor._new_epoch(job, plan, marker["start_from"])
    executor.catalog.resume_switch(job.uid, marker.get("at"), run=bool(marker.get("run")))
    return epoch

