"""Timestamps of a process's start-up phases, for the log and the benchmark (issue 19).

A cold ``streamjob run`` (or a server taking over) goes through these phases, each
marked once per process (per job for the job's phases) with :func:`mark`:

=====================  ==============================================================
``process start``      the kernel's start time of this process (``/proc/self/stat``)
``imports done``       the CLI's modules imported, the command about to run
``JVM up``             Spark's driver JVM launched and its gateway connected
``session ready``      the SparkSession created (Python side, conf applied)
``lease taken``        a server took the job manager lease (a standby taking over)
``plan done``          the job planned from the catalog (per job)
``query started``      the job's streaming query started (``writeStream.start()``)
``first batch started``  the first micro-batch that committed began (Spark's progress
                       ``timestamp``; per job)
``first commit``       the first checkpoint recorded in the catalog (per job)
=====================  ==============================================================

Each mark is logged at DEBUG (``streamjob.phases``: ``phase 'JVM up' at +2.314 s``,
seconds since the process started) and, when the environment variable
``STREAMJOB_PHASES`` names a file, appended to it as one JSON line
``{"pid": 123, "phase": "JVM up", "at": <epoch seconds>, "since_start_s": 2.314,
"job": null}``, which the benchmark's scenario 4 reads. Times are wall-clock (epoch
seconds), so that several processes' marks share one axis.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time

log = logging.getLogger(__name__)

#: The environment variable naming the JSON-lines file marks are appended to.
PHASES_ENV = "STREAMJOB_PHASES"
#: The phases in their usual order (module docstring).
PHASES = ("process start", "imports done", "JVM up", "session ready", "lease taken",
          "plan done", "query started", "first batch started", "first commit")

_lock = threading.Lock()
_seen: set[tuple[str, str | None]] = set()
_started: float | None = None


def process_started_at() -> float:
    """Epoch seconds at which this process started: ``/proc/self/stat`` field 22 (clock
    ticks after boot) plus the boot time of ``/proc/stat``; on systems without /proc,
    the time this module was first asked (a lower bound of the true start-up cost)."""
    global _started
    if _started is None:
        try:
            with open("/proc/self/stat") as f:
                ticks = int(f.read().rsplit(")", 1)[1].split()[19])
            with open("/proc/stat") as f:
                boot = next(int(line.split()[1]) for line in f if line.startswith("btime"))
            _started = boot + ticks / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError, StopIteration):
            _started = time.time()
    return _started


def mark(phase: str, job: str | None = None, at: float | None = None) -> bool:
    """Record ``phase`` (one of :data:`PHASES`) for this process, or for ``job`` (its
    qualified name), at epoch seconds ``at`` (now by default), once: a later mark of the
    same phase and job is ignored (a failover's second attempt is not a cold start).
    Returns True if it was recorded. Never raises (a file that cannot be written is
    logged at DEBUG)."""
    key = (phase, job)
    with _lock:
        if key in _seen:
            return False
        _seen.add(key)
    at = time.time() if at is None else at
    since = at - process_started_at()
    log.debug("phase %r%s at +%.3f s", phase, f" of {job}" if job else "", since)
    path = os.environ.get(PHASES_ENV)
    if path:
        line = json.dumps({"pid": os.getpid(), "phase": phase, "at": at,
                           "since_start_s": round(since, 4), "job": job})
        try:
            with _lock, open(path, "a") as f:
                f.write(line + "\n")
        except OSError as exc:
            log.debug("phases not written to %s: %s", path, exc)
    return True


def mark_start() -> None:
    """Mark ``process start`` and ``imports done`` (the CLI, before its command runs)."""
    mark("process start", at=process_started_at())
    mark("imports done")


def read(path: str) -> list[dict]:
    """The marks appended to ``path`` (a ``STREAMJOB_PHASES`` file), in file order;
    [] if it does not exist. Lines that are not JSON (a process killed mid-write) are
    skipped."""
    out = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    continue
    except FileNotFoundError:
        return []
    return out
