"""When is a job idle: it has committed every record its sources held at a moment.

Used by ``streamjob run --until-idle`` (DESIGN §8): the targets are the Kafka end offsets
and the files of file streams, read once when waiting begins; the job is idle when its
latest checkpoint's offsets reach the offsets on every partition and its committed
batches hold every one of those files.
"""

from __future__ import annotations

from typing import Any

from ..connectors import spec as cspec
from ..connectors.kafka.source import end_offsets
from ..exceptions import JobError
from ..planner.plan import JobPlan


def targets_for(plan: JobPlan) -> dict[str, dict[str, int]]:
    """``{topic: {partition: end offset}}`` of the job's Kafka sources, read now.

    Raises:
        JobError: a source is unbounded in time (rate) and never idle.
        ConnectorError: a broker is unreachable.
    """
    targets: dict[str, dict[str, int]] = {}
    for src in plan.sources:
        if isinstance(src.spec, cspec.KafkaSourceSpec):
            targets.update(end_offsets(src.spec.bootstrap, src.spec.topic, src.spec.security,
                                       src.spec.request_timeout_ms))
        elif isinstance(src.spec, cspec.RateSourceSpec):
            raise JobError(
                f"job {plan.qualified_name} reads the rate stream {src.stream.qualified_name}, "
                "which never runs out of input; --until-idle cannot apply")
    return targets


def file_targets(plan: JobPlan) -> set[str]:
    """The files of the job's file streams present now (absolute paths); hidden and
    temporary files (``.``/``_`` prefix), which Spark's file source skips, are left out."""
    from pathlib import Path

    files: set[str] = set()
    for src in plan.sources:
        if isinstance(src.spec, cspec.FileSourceSpec):
            root = Path(src.spec.path.removeprefix("file://"))
            if root.is_dir():
                files.update(str(p.resolve()) for p in root.rglob("*") if p.is_file()
                             and not p.name.startswith((".", "_")))
    return files


def files_reached(committed: set[str], targets: set[str]) -> bool:
    """True if every target file is among the committed ones (Spark's ``file:///``
    URIs and plain paths compared as paths)."""
    def norm(uri: str) -> str:
        return uri.removeprefix("file:").lstrip("/")
    have = {norm(u) for u in committed}
    return all(norm(t) in have for t in targets)


def reached(offsets: dict[str, Any], targets: dict[str, dict[str, int]]) -> bool:
    """True if ``offsets`` (a checkpoint's) equal ``targets`` on every partition.

    Offsets beyond a partition's end are not "caught up" but lost data (the topic was
    deleted and recreated, or truncated: README, "Lost offsets"): the job's source fails
    on them, or, with ``"fail.on.data.loss"="false"``, reads the partition again, and the
    wait goes on until a checkpoint reaches the end again (issue 13 point 6).
    """
    for topic, parts in targets.items():
        have = offsets.get(topic) or {}
        for p, end in parts.items():
            at = int(have.get(str(p), 0))
            if (at < end and end > 0) or at > end:
                return False
    return True
