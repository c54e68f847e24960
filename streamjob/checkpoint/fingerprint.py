"""Fingerprints of a job's logic, kept with its checkpoints (DESIGN §4).

Spark can resume a query from a checkpoint only if the query is compatible with it: the
same sources (their number and identity), and for a stateful query (aggregation,
window, DISTINCT, stream-stream join) the same state schema — otherwise it fails deep
inside the state store with a JVM stack trace, or silently reads state of a different
shape. streamjob therefore writes a fingerprint of the job into its checkpoint directory
(``streamjob.fingerprint``, JSON) at every start, records it with each checkpoint, and
before a start compares the planned job with the one that took the checkpoints:

- the set of source streams changed: refused (Spark does not allow it);
- the query is stateful now or was then, and its text or the columns of its streams
  changed: refused;
- anything else (a stateless query's projection or filter, the sink's columns): allowed,
  as Spark allows it for stateless queries.

A refusal says what changed and how to start fresh: DROP STREAMJOB (which purges the
checkpoints) and CREATE it again, or ALTER STREAMJOB ... AS (docs/upgrades.md). Checkpoints
taken before fingerprints existed are accepted as they are.

A planned change (ALTER STREAMJOB ... AS, CREATE OR REPLACE STREAMJOB, issue 30) writes the
new query's fingerprint beside the stored one (``streamjob.fingerprint.next``,
:func:`plan_change`) before the catalog switches to the new query: a start accepts the
plan if it matches either, and the next :func:`write` makes it the stored one. So a switch
killed before the catalog changed restarts the old query, and one killed after it the
new one, and an unplanned change is refused as before.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass

from typing import TYPE_CHECKING

from ..exceptions import ChangedLogic, CheckpointError
from . import store
from .filesystems import reachable_here
from .store import join_uri, log_ids

if TYPE_CHECKING:
    from ..planner.plan import JobPlan

FILE_NAME = "streamjob.fingerprint"
#: The fingerprint of a planned change not yet started (:func:`plan_change`).
NEXT_NAME = "streamjob.fingerprint.next"
VERSION = 1


def _digest(value) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Fingerprint:
    """What a checkpoint depends on: ``sources`` (the source streams' names),
    ``query`` (digest of the Spark SQL of the job and its derived streams, and the code
    hashes of the user functions it calls), ``schemas``
    (digest of the source streams' columns), ``sink`` (digest of the sink's columns and
    output mode) and whether the query keeps state."""

    sources: tuple[str, ...]
    query: str
    schemas: str
    sink: str
    stateful: bool
    version: int = VERSION

    def encode(self) -> str:
        """A one-line form for checkpoint records (under 255 characters for few sources)."""
        return (f"v{self.version};stateful={int(self.stateful)};query={self.query};"
                f"schemas={self.schemas};sink={self.sink}")


def of_plan(plan: "JobPlan") -> Fingerprint:
    """The fingerprint of a planned job."""
    sources = tuple(sorted(s.stream.qualified_name for s in plan.sources))
    stateful = bool(plan.query.aggregate or plan.query.windows or len(plan.sources) > 1)
    logic = [plan.query.select_sql, [d.select_sql for d in plan.derived]]
    if plan.functions:  # the code of each user function it calls (docs/functions.md)
        logic.append(sorted((f.database, f.name, f.code_hash) for f in plan.functions))
    return Fingerprint(
        sources=sources,
        query=_digest(logic),
        schemas=_digest(sorted((s.stream.qualified_name, list(map(dict, s.stream.columns)))
                               for s in plan.sources)),
        sink=_digest([plan.sink.qualified_name, list(map(dict, plan.sink.columns)),
                      plan.output_mode]),
        stateful=stateful,
    )


def stored(checkpoint_dir: str, name: str = FILE_NAME) -> Fingerprint | None:
    """The fingerprint written with a checkpoint directory (``name``: that of a planned
    change, :data:`NEXT_NAME`), or None (none yet, or unreadable). Local paths and any
    Hadoop URI alike (:mod:`.filesystems`); a Hadoop URI in a process without Spark
    raises, as every checkpoint operation does.

    Raises:
        CheckpointError: a Hadoop URI in a process without Spark.
    """
    uri = join_uri(checkpoint_dir, name)
    try:
        text = store.read_file(uri)
    except CheckpointError as exc:
        if not reachable_here(uri):
            raise
        return None  # unreadable: treated as none (checkpoints from before fingerprints)
    if text is None:
        return None
    try:
        data = json.loads(text)
        data["sources"] = tuple(data["sources"])
        return Fingerprint(**data)
    except (ValueError, TypeError, KeyError):
        return None


def write(checkpoint_dir: str, fp: Fingerprint, name: str = FILE_NAME) -> None:
    """Write ``fp`` into the checkpoint directory (created if needed), atomically, on a
    local path or any Hadoop URI; as the stored fingerprint, a planned change's
    (:data:`NEXT_NAME`) is removed.

    Raises:
        CheckpointError: it cannot be written, or a Hadoop URI in a process without Spark.
    """
    store.write_file(join_uri(checkpoint_dir, name), json.dumps(asdict(fp), indent=1))
    if name == FILE_NAME:
        store.delete_file(join_uri(checkpoint_dir, NEXT_NAME))


def plan_change(checkpoint_dir: str, fp: Fingerprint) -> bool:
    """Accept ``fp`` (a planned change's, issue 30) at the next start beside the stored
    fingerprint (module docstring). Returns False when the directory has no stored
    fingerprint (nothing to accept it against: a start accepts any plan then)."""
    if stored(checkpoint_dir) is None:
        return False
    write(checkpoint_dir, fp, NEXT_NAME)
    return True


def check(checkpoint_dir: str, plan: "JobPlan") -> Fingerprint:
    """Compare the planned job with the one that took the checkpoints in
    ``checkpoint_dir``; returns the plan's fingerprint.

    Raises:
        ChangedLogic: (a JobError) the checkpoints cannot be resumed by this job (says what changed and
            how to start fresh); a user function it calls was edited since CREATE
            FUNCTION (:func:`streamjob.udf.source.check_unchanged`).
    """
    from ..udf.source import check_unchanged

    check_unchanged(plan.functions)
    new = of_plan(plan)
    old = stored(checkpoint_dir)
    if old is None or not log_ids(checkpoint_dir, "offsets"):
        return new
    if stored(checkpoint_dir, NEXT_NAME) == new:  # a planned change (ALTER ... AS)
        return new
    changes = []
    if old.sources != new.sources:
        changes.append(f"its streams changed from {', '.join(old.sources)} to "
                       f"{', '.join(new.sources)}")
    if old.stateful or new.stateful:
        if old.stateful != new.stateful:
            changes.append("it " + ("no longer keeps" if old.stateful else "now keeps")
                           + " state (aggregation, window or join)")
        if old.query != new.query:
            changes.append("its query changed")
        if old.schemas != new.schemas:
            changes.append("the columns of its streams changed")
    if not changes:
        return new
    raise ChangedLogic(
        f"streamjob {plan.qualified_name} cannot resume from its checkpoints: "
        f"{'; '.join(changes)} since they were taken, and Spark cannot carry a "
        f"{'stateful ' if old.stateful or new.stateful else ''}query's checkpoint across "
        f"that. To start fresh, DROP STREAMJOB {plan.qualified_name} (its checkpoints are "
        f"purged) and CREATE it again.")
