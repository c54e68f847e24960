"""Encoding a Kafka table's rows into records (:func:`encode_records`: JSON or Hive's
delimited text; the key column, or the primary key of an upsert table, as the record
key) and choosing their partitions
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


def _json_texts(cols, n: int) -> list[bytes]:
    """One JSON object per row (``n`` rows) of ``cols`` (``_column_values``), fields in
    that order."""
    names = [c[0] for c in cols]
    convs = [_json_converter(t) if t is not None else None for _, t, _ in cols]
    fields = [[None if v is None else conv(v) for v in vals]
              for conv, (_, _, vals) in zip(convs, cols)]
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
    return [dumps(dict(zip(names, row))).encode("utf-8") for row in zip(*fields)] \
        if fields else [b"{}"] * n


def _delimited_texts(cols, n: int, delimiter: str) -> list[bytes]:
    """One Hive text line per row (``n`` rows) of ``cols``: fields joined with
    ``delimiter``.

    Raises:
        ConnectorError: a value whose text holds the delimiter (names column and row).
    """
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
    return [delimiter.join(row).encode("utf-8") for row in zip(*fields)] \
        if fields else [b""] * n


def _pick(cols, name: str, columns: Sequence[dict], what: str):
    match = [c for c in cols if c[0].lower() == name.lower()]
    if not match:
        raise ValidationError(f"Kafka table {what} '{name}' is not a column "
                              f"({', '.join(c['name'] for c in columns)})")
    return match[0]


def _raw_keys(column, upsert: bool) -> list[bytes | None]:
    """The text of one column as UTF-8 keys; NULL gives no key, or for an upsert table
    an error (a compacted topic refuses records without a key, and the row would have
    no key to be the latest value of)."""
    name, typ, vals = column
    conv = _text_converter(typ) if typ is not None else str
    if upsert and None in vals:
        raise ConnectorError(
            f"primary key column '{name}' is NULL in row {vals.index(None) + 1} of the "
            "batch: with \"key\" naming it, its text is the record key, and a record "
            "without a key cannot be upserted (a compacted topic refuses it); drop \"key\" "
            "to encode the key in the table's format (NULL kept), or filter NULL keys out")
    return [None if v is None else conv(v).encode("utf-8") for v in vals]


def encode_records(table: pa.Table, columns: Sequence[dict], fmt: str = "json",
                   delimiter: str = ",", key: str | None = None,
                   primary_key: Sequence[str] = ()
                   ) -> tuple[list[bytes | None], list[bytes]]:
    """The records of ``table``'s rows: ``(keys, values)``, one entry per row, in order.

    ``columns`` are the table's declared columns ``[{"name", "type"}, ...]`` (fields are
    taken from ``table`` by name, case-insensitively); ``fmt`` is ``json`` or
    ``delimited``; ``key`` a declared column name or None; ``primary_key`` the upsert
    key's declared columns (``"primary.key"``) or empty. The value is always the whole
    row. The key:

    - ``primary_key`` without ``key``: the primary-key columns, in ``primary_key``
      order, encoded in ``fmt`` as a value of just those columns is: ``json`` gives
      ``{"k1":v1,"k2":v2}`` by declared name (Flink's upsert-kafka with
      ``key.format=json``; ksqlDB's JSON key of several columns), ``delimited`` the
      fields joined with ``delimiter`` (a single column: its text). NULL stays JSON
      ``null`` resp. ``\\N``, so every row has a key.
    - ``primary_key`` of one column named by ``key`` too: that column's text, UTF-8
      (ksqlDB's ``KEY_FORMAT='KAFKA'`` for a string key); a NULL is an error.
    - ``key`` alone: that column's text; NULL gives a record without a key.
    - neither: no keys.

    The value rules are in the module docstring of :mod:`.sink`.

    Raises:
        ConnectorError: a delimited value whose text holds the delimiter (names the column
            and the row); a NULL raw primary key (names the column and the row); an
            unknown format.
        ValidationError: ``key`` or a ``primary_key`` column is not a declared column.
    """
    if fmt not in ("json", "delimited"):
        raise ConnectorError(f"unknown Kafka table format '{fmt}' (json or delimited)")
    n = table.num_rows
    cols = _column_values(table, columns)
    encode = (lambda c: _json_texts(c, n)) if fmt == "json" \
        else (lambda c: _delimited_texts(c, n, delimiter))
    values = encode(cols)
    keys: list[bytes | None] = [None] * n
    if key is not None:
        keys = _raw_keys(_pick(cols, key, columns, "key"), bool(primary_key))
    elif primary_key:
        keys = encode([_pick(cols, k, columns, "primary key column") for k in primary_key])
    return keys, values


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
