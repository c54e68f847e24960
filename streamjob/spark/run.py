"""The Spark side of one run of a job's query: :class:`QueryRun`, a context manager that
starts the job's streaming query in its session clone, with the job's one listener, for
one attempt (:class:`streamjob.manager.attempt.Attempt`), and stops it on exit.

Everything comes in built: the bound plan, the prepared sink, the checkpoint directory
and the callables the listener feeds; like :mod:`.query` this imports no connector,
planner, security or checkpoint module.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Sequence

from ..releases import BuiltInOrder, Releases
from .listener import ProgressListener
from .query import start_query

log = logging.getLogger(__name__)


class QueryRun(BuiltInOrder):
    """The job's streaming query in its session clone.

    Entering, in this order (the release of each step, if it has one, in brackets;
    releases run last-built first, both tried, a failure logged at DEBUG level: a dead
    JVM has no listener left, a failed query is stopped already):

    1. ``conf`` set on the session (Spark reads it as the query starts: the checkpoint's
       retention, :attr:`streamjob.checkpoint.run.CheckpointRun.spark_conf`);
    2. the job's one :class:`~.listener.ProgressListener`, feeding ``on_progress`` and
       ``on_idle`` [removed from the session];
    3. the query started (:func:`~.query.start_query`) [stopped].

    Args:
        session: the job's session clone (:func:`~.session.job_session`).
        job_name: ``db.job``, for log lines.
        bound: the job's :class:`~streamjob.planner.bind.BoundQuery`.
        checkpoint_dir: the query's checkpoint location.
        sink: the job's table sink, built and prepared.
        conf: SQL settings for the session (step 1).
        on_progress, on_idle: as :class:`~.listener.ProgressListener`.

    After entering, :attr:`query` is the running StreamingQuery; it stays readable after
    the release. Raises (on entering) Spark's errors from starting the query (and the
    :class:`~streamjob.exceptions.ValidationError` of a view Spark cannot build).
    """

    def __init__(self, session, job_name: str, bound, checkpoint_dir: str, sink, *,
                 conf: dict[str, str] | None = None,
                 on_progress: Sequence[Callable[[Any], None]] = (),
                 on_idle: Callable[[], None] | None = None) -> None:
        self.session = session
        self.job_name = job_name
        self.bound = bound
        self.checkpoint_dir = checkpoint_dir
        self.sink = sink
        self.conf = dict(conf or {})
        self.on_progress = on_progress
        self.on_idle = on_idle
        self.query = None
        self._releases = Releases(job_name, log)

    def _build(self) -> None:
        session = self.session
        # 1. the session's conf
        for key, value in self.conf.items():
            session.conf.set(key, value)
        # 2. the listener
        listener = ProgressListener(self.job_name, on_progress=self.on_progress,
                                    on_idle=self.on_idle)
        session.streams.addListener(listener)
        self._releases.add("removing the listener",  # a dead JVM has none left
                           lambda: session.streams.removeListener(listener), best_effort=True)
        # 3. the query
        query = self.query = start_query(session, self.bound, self.checkpoint_dir, self.sink)
        self._releases.add("stopping the query", query.stop, best_effort=True)  # may have ended
