"""Encoding a Kafka table's rows into records (:func:`encode_records`: JSON or Hive's
delimited text, the key column as the record key) and choosing their partitions
(:func:`assign_partitions`: Kafka's default partitioner), for :mod:`.sink`."""

from __future__ import annotations

import datetime as _dt
import decimal
import json
from typing import Callable, Sequence

import pyarrow as pa

from streamjob.exceptions import ConnectorError, ValidationError

NULL_TEXT = "\\N"
"""Hive's NULL in delimited text (read back as NULL by :mod:`.formats`)."""

_UTC = _dt.timezone.utc


# -- encoding ------------------------------------------------------------------------


def _float_text(v: float) -> str | float:
    if v != v:
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "Infinity" if v > 0 else "-Infinity"
    return v


def _utc_naive(v: _dt.datetime) -> _dt.datetime:
    return v.astimezone(_UTC).replace(tzinfo=None) if v.tzinfo is not None else v


def _plain(v):
    """A nested Python value from Arrow as JSON-ready data (see the module docstring)."""
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return _float_text(v)
    if isinstance(v, decimal.Decimal):
        return format(v, "f")
    if isinstance(v, _dt.datetime):
        return _utc_naive(v).isoformat() + ("Z" if v.tzinfo is not None else "")
    if isinstance(v, _dt.date):
        return v.isoformat()
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).decode("utf-8", errors="replace")
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return str(v)


def _json_converter(typ: pa.DataType) -> Callable:
    """Non-null Arrow value of ``typ`` -> JSON-ready value."""
    if pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_integer(typ) \
            or pa.types.is_boolean(typ):
        return lambda v: v
    if pa.types.is_floating(typ):
        return _float_text
    if pa.types.is_map(typ):
        return lambda v: {str(_plain(k)): _plain(x) for k, x in v}
    return _plain


def _text_converter(typ: pa.DataType) -> Callable[[object], str]:
    """Non-null Arrow value of ``typ`` -> its delimited-field (and key) text."""
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        return lambda v: v
    if pa.types.is_boolean(typ):
        return lambda v: "true" if v else "false"
    if pa.types.is_integer(typ):
        return str
    if pa.types.is_floating(typ):
        return lambda v: str(_float_text(v))
    if pa.types.is_decimal(typ):
        return lambda v: format(v, "f")
    if pa.types.is_timestamp(typ):
        return lambda v: _utc_naive(v).isoformat(sep=" ")
    if pa.types.is_date(typ):
        return lambda v: v.isoformat()
    if pa.types.is_binary(typ) or pa.types.is_large_binary(typ):
        return lambda v: bytes(v).decode("utf-8", errors="replace")
    conv = _json_converter(typ)
    return lambda v: json.dumps(conv(v), ensure_ascii=False, separators=(",", ":"))


def _column_values(table: pa.Table, columns: Sequence[dict]
                   ) -> list[tuple[str, pa.DataType | None, list]]:
    """``(declared name, Arrow type, values)`` per declared column; a column the table
    lacks (an INSERT naming fewer columns) is all NULL."""
    by_lower = {name.lower(): i for i, name in enumerate(table.column_names)}
    out = []
    for c in columns:
        i = by_lower.get(c["name"].lower())
        if i is None:
            out.append((c["name"], None, [None] * table.num_rows))
        else:
            out.append((c["name"], table.schema.field(i).type, table.column(i).to_pylist()))
    return out


def encode_records(table: pa.Table, columns: Sequence[dict], fmt: str = "json",
                   delimiter: str = ",", key: str | None = None
                   ) -> tuple[list[bytes | None], list[bytes]]:
    """The records of ``table``'s rows: ``(keys, values)``, one entry per row, in order.

    ``columns`` are the table's declared columns ``[{"name", "type"}, ...]`` (fields are
    taken from ``table`` by name, case-insensitively); ``fmt`` is ``json`` or
    ``delimited``; ``key`` a declared column name or None. The rules are in the module
    docstring.

    Raises:
        ConnectorError: a delimited value whose text holds the delimiter (names the column
            and the row), or an unknown format.
        ValidationError: ``key`` is not a declared column.
    """
    n = table.num_rows
    cols = _column_values(table, columns)
    keys: list[bytes | None] = [None] * n
    if key is not None:
        match = [c for c in cols if c[0].lower() == key.lower()]
        if not match:
            raise ValidationError(f"Kafka table key '{key}' is not a column "
                                  f"({', '.join(c['name'] for c in columns)})")
        _, typ, vals = match[0]
        conv = _text_converter(typ) if typ is not None else str
        keys = [None if v is None else conv(v).encode("utf-8") for v in vals]
    if fmt == "json":
        names = [c[0] for c in cols]
        convs = [_json_converter(t) if t is not None else None for _, t, _ in cols]
        fields = [[None if v is None else conv(v) for v in vals]
                  for conv, (_, _, vals) in zip(convs, cols)]
        dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"),
                                 allow_nan=False).encode
        values = [dumps(dict(zip(names, row))).encode("utf-8") for row in zip(*fields)] \
            if fields else [b"{}"] * n
        return keys, values
    if fmt == "delimited":
        fields = []
        for name, typ, vals in cols:
            conv = _text_converter(typ) if typ is not None else str
            texts = [NULL_TEXT if v is None else conv(v) for v in vals]
            for row, text in enumerate(texts):
                if delimiter in text and vals[row] is not None:
                    raise ConnectorError(
                        f"column '{name}' of row {row + 1} of the batch holds the delimiter "
                        f"{delimiter!r} ({text[:60]!r}): a delimited record could not be read "
                        "back; choose a \"delimiter\" that does not occur in the data (such as "
                        "'\\001') or \"format\"=\"json\"")
            fields.append(texts)
        values = [delimiter.join(row).encode("utf-8") for row in zip(*fields)] \
            if fields else [b""] * n
        return keys, values
    raise ConnectorError(f"unknown Kafka table format '{fmt}' (json or delimited)")


def assign_partitions(keys: Sequence[bytes | None], partitions: Sequence[int]) -> list[int]:
    """The partition of each record: a keyed record by Kafka's default partitioner
    (murmur2 of the key bytes, made positive, modulo the partition count, over the sorted
    partition ids: the Java client's ``BuiltInPartitioner.partitionForKey``), records
    without a key in contiguous runs spread evenly over the partitions in row order."""
    from kafka.partitioner.default import murmur2

    parts = sorted(partitions)
    if not parts:
        raise ConnectorError("the topic has no partitions")
    n, total = len(parts), len(keys)
    out = []
    for i, k in enumerate(keys):
        if k is not None:
            out.append(parts[(murmur2(k) & 0x7FFFFFFF) % n])
        else:
            out.append(parts[i * n // total])
    return out
