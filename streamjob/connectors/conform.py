"""A micro-batch's Arrow table brought to a table sink's declared columns: the rule the
lakehouse sinks (Delta, Iceberg) share. Columns match by name, case-insensitively (Spark
SQL's default resolution, ``spark.sql.caseSensitive=false``); every declared column must
be there once and nothing else; a column whose type differs in the table format's own
type names is a schema mismatch, other Arrow differences (time zones, list item names,
nullability) are cast away."""

from __future__ import annotations

from typing import Callable

import pyarrow as pa

from ..exceptions import SchemaMismatch

__all__ = ["conform_batch"]


def conform_batch(table: pa.Table | pa.RecordBatch, schema: pa.Schema, where: str,
                  batch_id: int, type_names: Callable[[pa.Schema], dict[str, str]]
                  ) -> pa.Table:
    """``table`` with ``schema``'s names and Arrow types, in ``schema``'s order.

    ``where`` names the sink in messages (``Delta table default.t at /x``); ``type_names``
    maps an Arrow schema to ``{column: the format's type name}``, so two columns of the
    same format type (a ``timestamp[us]`` with and without a time zone, both Delta's
    ``timestamp``) are cast, not refused.

    Raises:
        SchemaMismatch: a column undeclared, missing or twice, or of another type in the
            format's names (``columns`` names them).
    """
    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    by_lower = {f.name.lower(): f.name for f in schema}
    given: dict[str, str] = {}
    for n in table.column_names:
        name = by_lower.get(n.lower())
        if name is None or name in given:
            raise SchemaMismatch(
                f"batch {batch_id} for {where} has "
                f"{'a duplicate' if name else 'an undeclared'} column '{n}' "
                f"(declared: {', '.join(by_lower.values())})", columns=(n,))
        given[name] = n
    missing = [f.name for f in schema if f.name not in given]
    if missing:
        raise SchemaMismatch(f"batch {batch_id} for {where} lacks column(s) "
                             f"{', '.join(missing)}", columns=tuple(missing))
    table = table.select([given[f.name] for f in schema]).rename_columns(schema.names)
    if table.schema.equals(schema):
        return table
    have, want = type_names(table.schema), type_names(schema)
    wrong = [n for n in schema.names if have[n] != want[n]]
    if wrong:
        raise SchemaMismatch(
            f"batch {batch_id} for {where} has another schema than the table: "
            + "; ".join(f"column {n} is {have[n]}, the table's {want[n]}" for n in wrong),
            columns=tuple(wrong))
    return table.cast(schema)
