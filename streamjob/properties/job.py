"""A job's effective properties as one typed object, built once from the registry
(:func:`job_properties`): what the planner, the job manager and the Spark query read,
instead of dotted names looked up in each of them.

Each attribute is one property of :data:`~streamjob.properties.definitions.JOB`, parsed
by it (durations in ms); the registry's names stay the documented and stored form, and
``props["morphling.job.checkpoint.interval"]`` still reads a value by that name. The
``spark.sql.*`` settings a job passes through to its session are in ``spark``.
``start_position`` is not a user property: it is the starting position of a new
checkpoint epoch (``START STREAMJOB j FROM EARLIEST | LATEST | TIMESTAMP t``), set by the
job manager for that first start only.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any, Iterator, Mapping

#: Attribute of :class:`JobProperties` -> the registry's name of that job property.
NAMES = {
    "checkpoint_enabled": "morphling.job.enable.checkpoint",
    "checkpoint_interval_ms": "morphling.job.checkpoint.interval",
    "trigger_interval_ms": "streamjob.trigger.interval",
    "event_mode": "streamsql.use.eventmode",
    "auto_failover": "morphling.job.enable.auto.failover",
    "max_failures": "morphling.task.max.failures",
    "failure_window_ms": "morphling.task.failure.window",
    "initial_backoff_ms": "streamjob.failover.initial.backoff",
    "max_backoff_ms": "streamjob.failover.max.backoff",
    "auto_flush": "morphling.result.auto.flush",
    "checkpoint_backend": "morphling.checkpoint.backend",
    "checkpoint_timeout_ms": "morphling.checkpoint.timeout",
    "checkpoints_retained": "morphling.checkpoint.retained",
    "max_records_per_batch": "morphling.job.max.records.per.batch",
    "alert_webhook": "streamjob.alert.webhook",
    "alert_checkpoint_age_ms": "streamjob.alert.checkpoint.age",
    "alert_lag_records": "streamjob.alert.lag.records",
    "alert_lag_for_ms": "streamjob.alert.lag.for",
    "max_disorder_ms": "morphling.maxlag.on.disorder",
    "flush_interval_ms": "morphling.hdfs.flush.interval.ms",
    "placement_labels": "streamjob.placement.labels",
    "placement_cores": "streamjob.placement.cores",
    "placement_memory_mb": "streamjob.placement.memory",
}
#: The plan key of :attr:`JobProperties.start_position` (not a user property).
START_POSITION = "streamjob.start.position"


@dataclass(frozen=True)
class JobProperties(Mapping):
    """Typed effective job properties (see the module docstring); a read-only mapping by
    the registry's names too, so it can be shown and compared as before."""

    checkpoint_enabled: bool
    checkpoint_interval_ms: int
    trigger_interval_ms: int
    event_mode: bool
    auto_failover: bool
    max_failures: int
    failure_window_ms: int
    initial_backoff_ms: int
    max_backoff_ms: int
    auto_flush: bool
    checkpoint_backend: str
    checkpoint_timeout_ms: int
    checkpoints_retained: int
    max_records_per_batch: int
    alert_webhook: str | None
    alert_checkpoint_age_ms: int
    alert_lag_records: int
    alert_lag_for_ms: int
    max_disorder_ms: int | None
    flush_interval_ms: int | None
    #: comma-separated labels a sharing server must have to run the job (issue 33)
    placement_labels: str | None
    #: driver cores and memory (MiB) the job needs on a sharing server (issue 33)
    placement_cores: int = 1
    placement_memory_mb: int = 128
    spark: Mapping[str, str] = field(default_factory=dict)
    start_position: str | None = None

    def _as_dict(self) -> dict[str, Any]:
        out = {name: getattr(self, attr) for attr, name in NAMES.items()}
        out.update(self.spark)
        if self.start_position is not None:
            out[START_POSITION] = self.start_position
        return out

    def __getitem__(self, name: str) -> Any:
        return self._as_dict()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._as_dict())

    def __len__(self) -> int:
        return len(self._as_dict())

    @property
    def trigger_ms(self) -> int:
        """The micro-batch trigger interval in ms (Spark's ``Trigger.ProcessingTime``):
        0 under ``streamsql.use.eventmode``, else ``streamjob.trigger.interval``. It is
        not the checkpoint interval: a checkpoint is the micro-batch that completes after
        each ``morphling.job.checkpoint.interval`` (DESIGN §4)."""
        return 0 if self.event_mode else self.trigger_interval_ms

    def watermark_delay(self, declared: str) -> str:
        """The watermark delay of an event-time stream whose ``"watermark.delay"`` is
        ``declared`` (a Spark interval): ``morphling.maxlag.on.disorder`` when given
        (-1, events in order, is no delay), else ``declared``."""
        if self.max_disorder_ms is None:
            return declared
        return f"{max(0, self.max_disorder_ms)} milliseconds"

    def backoff_s(self, failures: int) -> float:
        """Seconds to wait before restart number ``failures`` (1, 2, ...; failures since
        the last completed checkpoint), before jitter: ``initial_backoff_ms`` doubled per
        earlier failure, at most ``max_backoff_ms`` (Flink's exponential-delay restart
        strategy, ``restart-strategy.exponential-delay.*``)."""
        doubled = self.initial_backoff_ms * 2.0 ** max(0, failures - 1)
        return min(self.max_backoff_ms, doubled) / 1000

    def starting_at(self, position: str | None) -> "JobProperties":
        """These properties with the new epoch's starting position set."""
        return replace(self, start_position=position)


def job_properties(values: Mapping[str, Any]) -> JobProperties:
    """The typed object of ``{registry name: typed value}`` (:func:`streamjob.properties.values`:
    every job property present, ``spark.sql.*`` settings passed through).

    A property missing from ``values`` takes its registry default (Slipstream's
    ``morphling.maxlag.on.disorder`` and ``morphling.hdfs.flush.interval.ms`` are only
    there when given).
    """
    from .definitions import JOB

    spark = {k: str(v) for k, v in values.items() if JOB.get(k) is None and JOB.passthrough(k)}
    typed = {attr: values[name] if name in values else JOB.lookup(name).default
             for attr, name in NAMES.items()}
    return JobProperties(**typed, spark=spark, start_position=values.get(START_POSITION))


def attributes() -> set[str]:
    """The attributes holding registry properties (a test checks them against the
    registry: every job property is one, except Slipstream's that only set another
    property (``maps_to``) or have no effect (``ignored``))."""
    return {f.name for f in fields(JobProperties)} - {"spark", "start_position"}
