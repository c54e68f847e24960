"""An Iceberg stream as a :class:`~streamjob.connectors.sources.StreamSource`: an Iceberg
table's snapshots read incrementally by streamjob's data source ``streamjob_iceberg``
(:mod:`.source`), its declared columns checked against the table at job start, its
current snapshot the target of ``run --until-idle``, its directory and catalog what the
admin's rules must allow (DESIGN §9, as for the Iceberg sink). Imports neither Spark nor
pyiceberg until a method needs them."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from ...exceptions import SchemaMismatch
from ..source_base import QuietSource, Reader
from ..spec import Reach
from . import options as opt


class IcebergStreamSource(QuietSource):
    """An Iceberg stream (:class:`~streamjob.connectors.iceberg.spec.IcebergSourceSpec`)."""

    identifier = "iceberg"
    data_sources = frozenset({opt.SOURCE_NAME})
    observes_columns = False  # the table's schema says which columns there are

    def __init__(self, spec) -> None:
        self.spec = spec
        self.key = opt.offsets_key(spec.ref.path)

    def check(self, columns) -> None:
        """The table must exist and hold every declared column (``[{"name", "type"}]``,
        names case-insensitive) with the same Iceberg type; its other columns are not
        read.

        Raises:
            ConnectorError: no such table, or the catalog unreachable.
            SchemaMismatch: names each declared column missing or of another type.
        """
        from ...columntypes import table_arrow_type
        from .catalog import load_table
        from .sink import iceberg_types

        tbl = load_table(self.spec.ref)
        have = iceberg_types(tbl.schema().as_arrow())
        low = {k.lower(): v for k, v in have.items()}
        want = iceberg_types(pa.schema([pa.field(c["name"], table_arrow_type(c["type"]))
                                        for c in columns]))
        problems, names = [], []
        for name, typ in want.items():
            got = low.get(name.lower())
            if got == typ:
                continue
            problems.append(f"column {name} is not in the table" if got is None else
                            f"column {name} is {got} in the table, declared {typ}")
            names.append(name)
        if problems:
            raise SchemaMismatch(
                f"{self.spec.ref.where()} does not fit the stream's declaration: "
                f"{'; '.join(problems)} (the table has: "
                f"{', '.join(f'{k} {v}' for k, v in have.items())})", columns=tuple(names))

    def reader(self, columns, *, start: str | None, max_records: int,
               group_id: str | None, dead_letter=None) -> Reader:
        """The job's reader; the table checked first (:meth:`check`). ``start`` (START
        ... FROM) overrides ``"iceberg.starting"``: ``earliest`` or ``latest`` (a
        timestamp reads as ``earliest``). The catalog URL goes to Spark resolved (its
        password from its reference; the options are never shown).

        Raises:
            ConnectorError, SchemaMismatch: see :meth:`check`.
        """
        from ...columntypes import ddl
        from .catalog import resolved_uri

        self.check(columns)
        ref = self.spec.ref
        starting = start if start in ("earliest", "latest") else self.spec.starting
        options = {opt.CATALOG: resolved_uri(ref.catalog_uri), opt.NAMESPACE: ref.namespace,
                   opt.TABLE: ref.name, opt.PATH: ref.path, opt.KEY: self.key,
                   opt.STARTING: starting}
        return Reader(opt.SOURCE_NAME, options, ddl(columns), parallelism=opt.PARTITIONS)

    def describe(self, *, group_id: str | None, dead_letter_table: str | None,
                 checkpointed: bool, offsets: dict, checkpoint_id: str | None) -> dict:
        out: dict[str, Any] = dict(connector=self.identifier,
                                   location=f"{self.spec.ref.where()} at {self.spec.location}",
                                   format="iceberg")
        first = ("the table's current snapshot, then the appends after it"
                 if self.spec.starting == "earliest" else "the appends after the current snapshot")
        at = offsets.get(self.key)
        if not checkpointed:
            out["starts_from"] = f"{first}, at every start: the job keeps no checkpoint"
        elif checkpoint_id is not None and isinstance(at, dict):
            out["starting_offsets"] = dict(at)
            out["starts_from"] = f"after snapshot {at.get('snapshot')} (checkpoint {checkpoint_id})"
        else:
            out["starts_from"] = f"{first}: no checkpoint yet; then from its checkpoints"
        return out

    def end_offsets(self) -> dict[str, dict[str, int]]:
        """``{key: {"sequence": current sequence number + 1}}``: the position after the
        current snapshot (the target of ``run --until-idle``).

        Raises:
            ConnectorError: no such table.
        """
        from .catalog import load_table

        snap = load_table(self.spec.ref).current_snapshot()
        return {self.key: {"sequence": 0 if snap is None else (snap.sequence_number or 0) + 1}}

    def reach(self) -> Reach:
        return self.spec.reach()
