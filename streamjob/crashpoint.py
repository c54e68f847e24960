"""Crash sentinels for tests only (issue 30 point 5; docs/reliability.md, "Crash tests").

A process-level test sets ``STREAMJOB_TEST_CRASH_AT=<point>`` in a ``streamjob``
process's environment; when the process reaches that named point (:func:`reached`), it
SIGKILLs itself, as ``kill -9`` would: no ``finally``, no atexit, no catalog write. The
points (each named once, where it is reached):

- ``upgrade.stopped``: ALTER STREAMJOB ... AS of a running job, after its graceful stop
  and before the catalog switch (executor/upgrade.py);
- ``upgrade.switched``: after the catalog switch and before the job is started again;
- ``promote.stopped``: PROMOTE SHADOW of a running job, after its graceful stop (the
  pending switch recorded, as ALTER's) and before the catalog switch
  (executor/shadow.py);
- ``promote.switched``: PROMOTE SHADOW after the catalog switch and before the job is
  started again and the scratch sinks dropped;
- ``savepoint.copy``: STOP ... WITH SAVEPOINT or CREATE SAVEPOINT, after half of the
  checkpoint's files were copied into the savepoint folder (checkpoint/savepoint.py;
  START ... FROM CHECKPOINT n copies through the same function, into ``<dir>.restoring``).

This variable is read here only. It is not a setting: never set it outside tests (the
process dies at the point, by design). The idea is bytewax's recovery tests.
"""

from __future__ import annotations

import os
import signal

__all__ = ["ENV", "POINTS", "reached"]

ENV = "STREAMJOB_TEST_CRASH_AT"
POINTS = ("upgrade.stopped", "upgrade.switched", "promote.stopped", "promote.switched",
          "savepoint.copy")


def reached(point: str) -> None:
    """SIGKILL this process if ``STREAMJOB_TEST_CRASH_AT`` names ``point`` (one of
    :data:`POINTS`); else nothing.

    Raises:
        ValueError: ``point`` is not a known point (a typo in streamjob's own code).
    """
    if point not in POINTS:
        raise ValueError(f"unknown crash point {point!r}")
    if os.environ.get(ENV) == point:
        os.kill(os.getpid(), signal.SIGKILL)
