"""The connector side of one run of a job's query: :class:`ConnectorRun`, a context
manager that builds what the job's connectors need for one attempt
(:class:`streamjob.manager.attempt.Attempt`) and releases it in reverse order.

What it needs of the checkpoint comes in as values (the sink markers' key, whether the
directory is new): it imports no checkpoint, Spark or job manager module.
"""

from __future__ import annotations

import logging
from typing import Any, Iterable, Sequence

from ..exceptions import StreamJobError
from ..releases import BuiltInOrder, Releases
from .sinks import TableSink, table_sink
from .sources import StreamSource, group_committers

log = logging.getLogger(__name__)


class ConnectorRun(BuiltInOrder):
    """The job's table sink, dead-letter tables and consumer-group committers for one
    attempt.

    Entering builds, in this order (the release of each step, if it has one, in
    brackets; releases run last-built first, each even if an earlier one failed, a
    failed one logged; a step that raises releases what the earlier ones built):

    1. the table sink (:attr:`sink`, :func:`~.sinks.table_sink`) [closed; :attr:`sink`
       is None once it is closed];
    2. on a new durable checkpoint directory, the sink told
       (:meth:`~.sinks.TableSink.on_new_checkpoint`: a file table whose manifest already
       lists batches refuses);
    3. the dead-letter tables of tolerant Kafka sources, created or checked, so executors
       only insert (DESIGN §7);
    4. the consumer-group committers (:attr:`committers`) [closed];
    5. the sink prepared (:meth:`~.sinks.TableSink.prepare`: a table created or its
       schema checked).

    Args:
        job_name: ``db.job``, for messages and Kafka client ids.
        table, spec: the sink's catalog table (a ``TableInfo``) and connector spec.
        marker: the key of the job's exactly-once markers (the job uid, with the
            checkpoint epoch: :func:`streamjob.checkpoint.identity.marker_key`).
        exactly_once, upsert, checkpointed: as :func:`~.sinks.table_sink`.
        new_checkpoint: the run begins a durable checkpoint directory that holds no
            offsets yet (step 2).
        dead_letters: the ``DeadLetterTarget`` of each tolerant Kafka source
            (:mod:`.kafka.dead_letter`).
        groups: ``(source, consumer group or None)`` of each source stream
            (:func:`~.sources.group_committers`).

    Raises (on entering) whatever a step raises: ValidationError for a table kind no
    job can write, or a table that does not fit its declaration; JobError for a file
    table whose manifest a new checkpoint would skip; ConnectorError for an unreachable
    system.
    """

    def __init__(self, job_name: str, table, spec, *, marker: str, exactly_once: bool,
                 upsert: bool = False, checkpointed: bool = True, new_checkpoint: bool = False,
                 dead_letters: Sequence[Any] = (),
                 groups: Iterable[tuple[StreamSource, str | None]] = ()) -> None:
        self.job_name = job_name
        self.table = table
        self.spec = spec
        self.marker = marker
        self.exactly_once = exactly_once
        self.upsert = upsert
        self.checkpointed = checkpointed
        self.new_checkpoint = new_checkpoint
        self.dead_letters = list(dead_letters)
        self.groups = list(groups)
        self.sink: TableSink | None = None
        self.committers: list = []
        self._releases = Releases(job_name, log)

    def _build(self) -> None:
        # 1. the sink
        sink = self.sink = table_sink(
            self.table, self.spec, marker=self.marker, job=self.job_name,
            exactly_once=self.exactly_once, upsert=self.upsert, checkpointed=self.checkpointed)
        self._releases.add("closing the sink", self._close_sink)
        # 2. a new checkpoint told
        if self.new_checkpoint:
            sink.on_new_checkpoint()  # e.g. a file table whose manifest lists batches
        # 3. the dead-letter tables
        if self.dead_letters:
            from .kafka.dead_letter import DeadLetterWriter  # only jobs that keep one

            for target in self.dead_letters:
                DeadLetterWriter(target).sink.prepare()
        # 4. the consumer-group committers: they connect lazily, at the first commit
        self.committers = group_committers(self.groups)
        for committer in self.committers:
            self._releases.add("closing a consumer-group committer", committer.close)
        # 5. the sink prepared
        sink.prepare()

    def _close_sink(self) -> None:
        """Close the table sink (a Kafka table's producer; the next attempt's sink fences
        it anyway, KIP-98)."""
        sink, self.sink = self.sink, None
        if sink is not None:
            sink.close()

    def commit_offsets(self, batch_id: int, offsets: dict) -> None:
        """Commit checkpoint ``batch_id``'s end offsets (merged, by source) to the
        consumer groups, so Kafka tools show the job's progress and lag (DESIGN §7; the
        engine never reads them back, except the ``committed`` reset strategy). One
        unreachable group is logged and does not stop the others."""
        for committer in self.committers:
            try:
                committer.commit(offsets)
            except StreamJobError as exc:
                log.warning("checkpoint %s: offsets not committed to the consumer group: %s",
                            batch_id, exc)
