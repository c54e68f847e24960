"""What one run of a job's query built and must undo: :class:`Releases`, named releases
run last-registered first, each even when an earlier one failed.

The job manager's attempt (:class:`streamjob.manager.attempt.Attempt`) and the part of it
each room builds (:class:`streamjob.checkpoint.run.CheckpointRun`,
:class:`streamjob.connectors.run.ConnectorRun`, :class:`streamjob.spark.run.QueryRun`)
keep one each: a release that fails is logged, never raised, so that the others still run
and the job's runner goes on to its next attempt (Python's
:class:`contextlib.ExitStack` underneath).
"""

from __future__ import annotations

import contextlib
import logging
from typing import Callable, TypeVar

#: each release, as it runs, at DEBUG level: ``job <db.job>: <what>``
trace = logging.getLogger(__name__)

_Built = TypeVar("_Built", bound="BuiltInOrder")


class Releases:
    """Named releases of one job's run, run in reverse order by :meth:`close`.

    Args:
        job_name: the job's qualified name (``db.job``), for log lines.
        log: where a failed release is logged: ``job <db.job>: <what> failed: <error>``,
            at WARNING level (DEBUG for a best-effort one).
    """

    def __init__(self, job_name: str, log: logging.Logger) -> None:
        self.job_name = job_name
        self.log = log
        self._stack = contextlib.ExitStack()

    def add(self, what: str, release: Callable[[], object], best_effort: bool = False) -> None:
        """Register ``release`` (no argument) to run at :meth:`close`; ``what`` names it
        (``closing the sink``); ``best_effort``: its failure is expected at times (a
        query that already ended, a dead JVM) and logged at DEBUG level only."""
        level = logging.DEBUG if best_effort else logging.WARNING

        def quietly() -> None:
            trace.debug("job %s: %s", self.job_name, what)
            try:
                release()
            except Exception as exc:  # noqa: BLE001 - one release must not skip the others
                self.log.log(level, "job %s: %s failed: %s", self.job_name, what, exc)
        self._stack.callback(quietly)

    def push(self, close: Callable[[], object]) -> None:
        """Register ``close`` (no argument) to run at :meth:`close`, unnamed: the
        ``close`` of a part that was built (opened) already and logs its own releases'
        failures (the rooms' parts of an attempt)."""
        self._stack.callback(close)

    def close(self) -> None:
        """Run the releases, last registered first (each once: idempotent)."""
        self._stack.close()


class BuiltInOrder:
    """The contract of a run's part built in numbered steps and released in reverse
    order: the attempt and each room's part of it. A subclass sets ``self._releases``
    (a :class:`Releases`) in its ``__init__``, builds its steps in :meth:`_build`
    (registering each step's release there as it is built) and documents the steps in
    its class docstring.

    :meth:`open` (or ``with``) builds; if a step raises, what was built is released and
    the error raised. :meth:`close` (or leaving the ``with``) releases, last built first;
    it is idempotent.
    """

    _releases: Releases

    def open(self: _Built) -> _Built:
        """Build the steps in order (the class docstring); returns self. If a step
        raises, what was built is released (:meth:`close`) and the error raised."""
        try:
            self._build()
        except BaseException:
            self.close()
            raise
        return self

    def __enter__(self: _Built) -> _Built:
        return self.open()

    def __exit__(self, *exc) -> bool:
        self.close()
        return False

    def close(self) -> None:
        """Release what was built, last built first (the class docstring). Idempotent."""
        self._releases.close()

    def _build(self) -> None:
        """The steps, in order; each registers its release in ``self._releases``."""
        raise NotImplementedError
