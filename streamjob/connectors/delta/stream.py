"""A Delta stream as a :class:`~streamjob.connectors.sources.StreamSource`: a Delta
table read incrementally by streamjob's data source ``streamjob_delta``
(:mod:`.source`), its declared columns checked against the table at job start, its
latest version the target of ``run --until-idle``, its LOCATION what the admin's
allowed roots must hold (DESIGN §9, as for the Delta sink). Imports neither Spark nor
delta-rs until a method needs them."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from ...exceptions import ConnectorError, SchemaMismatch
from ..source_base import QuietSource, Reader
from ..spec import Reach
from . import log as dlog
from . import options as opt


class DeltaStreamSource(QuietSource):
    """A Delta stream (:class:`~streamjob.connectors.delta.spec.DeltaSourceSpec`)."""

    identifier = "delta"
    data_sources = frozenset({opt.SOURCE_NAME})
    observes_columns = False  # the table's schema says which columns there are

    def __init__(self, spec) -> None:
        self.spec = spec
        self.key = opt.offsets_key(spec.path)

    def _where(self) -> str:
        return f"the Delta table at {self.spec.location}"

    def check(self, columns) -> None:
        """The table must exist and hold every declared column (``[{"name", "type"}]``,
        names case-insensitive) with the same Delta type (Delta's types:
        :func:`.sink.delta_types`); the table's other columns are not read.

        Raises:
            ConnectorError: no Delta table there; a table with column mapping or
                deletion vectors (not read).
            SchemaMismatch: names each declared column missing or of another type.
        """
        from ...columntypes import table_arrow_type
        from .sink import delta_types

        latest = dlog.latest_version(self.spec.path)
        if latest is None:
            raise ConnectorError(f"there is no Delta table at {self.spec.location} (no "
                                 "commit in its _delta_log); a Delta stream reads an "
                                 "existing table")
        from deltalake import DeltaTable

        try:
            dt = DeltaTable(self.spec.path)
            have = delta_types(pa.schema(dt.schema().to_arrow()))
            config = {k.lower(): str(v).lower() for k, v in dt.metadata().configuration.items()}
        except Exception as exc:  # DeltaError, OSError
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise ConnectorError(f"cannot open {self._where()}: {first}") from None
        if config.get("delta.columnmapping.mode", "none") != "none" or \
                config.get("delta.enabledeletionvectors") == "true":
            raise ConnectorError(f"{self._where()} uses column mapping or deletion vectors, "
                                 "which the Delta stream source does not read")
        low = {k.lower(): (k, v) for k, v in have.items()}
        want = delta_types(pa.schema([pa.field(c["name"], table_arrow_type(c["type"]))
                                      for c in columns]))
        problems, names = [], []
        for name, typ in want.items():
            got = low.get(name.lower())
            if got is None:
                problems.append(f"column {name} is not in the table")
            elif got[1] != typ:
                problems.append(f"column {name} is {_short(got[1])} in the table, declared "
                                f"{_short(typ)}")
            else:
                continue
            names.append(name)
        if problems:
            raise SchemaMismatch(
                f"{self._where()} does not fit the stream's declaration: "
                f"{'; '.join(problems)} (the table has: "
                f"{', '.join(f'{k} {_short(v)}' for k, v in have.items())})",
                columns=tuple(names))

    def reader(self, columns, *, start: str | None, max_records: int,
               group_id: str | None, dead_letter=None) -> Reader:
        """The job's reader; the table checked first (:meth:`check`). ``start`` (START
        ... FROM) overrides the stream's starting position: ``earliest`` the current
        snapshot, ``latest`` only new commits, a timestamp in ms the first version
        committed then or later. ``max_records`` does not apply (``maxfilespertrigger``
        caps a micro-batch).

        Raises:
            ConnectorError, SchemaMismatch: see :meth:`check`.
        """
        from ...columntypes import ddl

        self.check(columns)
        sp = self.spec
        version, ts = sp.starting_version, sp.starting_timestamp
        if start is not None:
            version, ts = {"earliest": (None, None), "latest": ("latest", None)}.get(
                start, (None, int(start) if str(start).isdigit() else None))
        options = {opt.PATH: sp.path, opt.KEY: self.key,
                   opt.MAX_FILES: str(sp.max_files),
                   opt.IGNORE_DELETES: str(sp.ignore_deletes).lower(),
                   opt.IGNORE_CHANGES: str(sp.ignore_changes).lower(),
                   opt.SKIP_CHANGE_COMMITS: str(sp.skip_change_commits).lower()}
        if version is not None:
            options[opt.STARTING_VERSION] = version
        if ts is not None:
            options[opt.STARTING_TIMESTAMP] = str(ts)
        return Reader(opt.SOURCE_NAME, options, ddl(columns), parallelism=opt.PARTITIONS)

    def _starting(self) -> str:
        sp = self.spec
        if sp.starting_version == "latest":
            return "the commits after the table's current version"
        if sp.starting_version is not None:
            return f"version {sp.starting_version} and the commits after it"
        if sp.starting_timestamp is not None:
            return f"the first version committed at or after {sp.starting_timestamp} ms"
        return "the table's current snapshot, then the commits after it"

    def describe(self, *, group_id: str | None, dead_letter_table: str | None,
                 checkpointed: bool, offsets: dict, checkpoint_id: str | None) -> dict:
        out: dict[str, Any] = dict(connector=self.identifier, location=self.spec.location,
                                   format="delta")
        at = offsets.get(self.key)
        if not checkpointed:
            out["starts_from"] = f"{self._starting()}, at every start: the job keeps no checkpoint"
        elif checkpoint_id is not None and isinstance(at, dict):
            out["starting_offsets"] = dict(at)
            out["starts_from"] = (f"table version {at.get('version')}, data file "
                                  f"{at.get('index', 0)} (checkpoint {checkpoint_id})")
        else:
            out["starts_from"] = f"{self._starting()}: no checkpoint yet; then from its checkpoints"
        return out

    def end_offsets(self) -> dict[str, dict[str, int]]:
        """``{key: {"version": latest + 1}}``: the position after every commit now (the
        target of ``run --until-idle``; a job whose checkpoint is there has read all).

        Raises:
            ConnectorError: no Delta table there.
        """
        latest = dlog.latest_version(self.spec.path)
        if latest is None:
            raise ConnectorError(f"there is no Delta table at {self.spec.location}")
        return {self.key: {"version": latest + 1}}

    def reach(self) -> Reach:
        return self.spec.reach()


def _short(delta_json: str) -> str:
    """A Delta type's JSON text as a word (``"long"``) or compact JSON."""
    import json

    t = json.loads(delta_json)
    return t if isinstance(t, str) else json.dumps(t, separators=(",", ":"))
