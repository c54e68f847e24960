"""Record formats of Kafka streams: JSON, delimited and raw, decoded to Arrow batches.

A Kafka record's value is bytes. The stream's ``"format"`` property (DESIGN §7) says how
to turn a batch of values into rows of the declared columns:

- ``json``: one JSON object per record; fields taken by column name (the key spelled as
  the column is declared, else one equal to it ignoring case, as Hive's JSON SerDe and
  Spark match them), missing fields and JSON nulls become SQL NULL, extra fields are
  ignored.
- ``delimited``: Hive's ROW FORMAT DELIMITED: fields split on one character (``,`` by
  default, any character such as ``'\\001'``), in declared column order; ``\\N`` and empty
  non-string fields are NULL; missing trailing fields are NULL.
- ``raw``: the record itself; the declared columns pick from ``key``, ``value``,
  ``topic``, ``partition``, ``offset``, ``timestamp``.

Decoding works on whole batches with Arrow's C++ readers; a batch the fast path rejects
is decoded record by record so the failing record can be named (topic, partition, offset).
"""

from __future__ import annotations

import datetime as _dt
import decimal
import io
import json
from dataclasses import dataclass
from typing import Sequence

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.json as pajson

from streamjob.exceptions import ConnectorError

from . import FORMATS  # noqa: F401 - re-exported; defined in the package (no pyarrow)

RAW_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp")
_NULLS = ("\\N",)


@dataclass(frozen=True)
class RecordSlice:
    """Records of one Kafka partition handed to a decoder.

    ``values``/``keys`` are the raw bytes (None for a null value/key), ``offsets`` and
    ``timestamps`` (ms since epoch) align with them."""

    topic: str
    partition: int
    offsets: Sequence[int]
    values: Sequence[bytes | None]
    keys: Sequence[bytes | None]
    timestamps: Sequence[int]


class MalformedRecord(ConnectorError):
    """A record that does not decode into the declared columns; names where it is.

    The record's raw ``key``, ``value`` (bytes) and ``timestamp`` (ms since epoch) are
    given by :func:`decode_tolerant` (keyword-only; None when not known) so the record
    can go to a dead-letter table."""

    def __init__(self, topic: str, partition: int, offset: int, reason: str, *,
                 key: bytes | None = None, value: bytes | None = None,
                 timestamp: int | None = None) -> None:
        self.topic, self.partition, self.offset, self.reason = topic, partition, offset, reason
        self.key, self.value, self.timestamp = key, value, timestamp
        super().__init__(
            f"malformed record in topic '{topic}' partition {partition} offset {offset}: {reason}"
        )


def decode(records: RecordSlice, schema: pa.Schema, fmt: str, delimiter: str = ",") -> pa.RecordBatch:
    """Decode ``records`` into one Arrow batch of ``schema``.

    Raises:
        MalformedRecord: a record cannot be decoded (names topic, partition and offset).
        ConnectorError: ``fmt`` is not one of :data:`FORMATS`.
    """
    if not records.offsets:
        return pa.RecordBatch.from_pylist([], schema=schema)
    if fmt == "json":
        return _decode_json(records, schema)
    if fmt == "delimited":
        return _decode_delimited(records, schema, delimiter)
    if fmt == "raw":
        return _decode_raw(records, schema)
    raise ConnectorError(f"unknown stream format '{fmt}' (use one of: {', '.join(FORMATS)})")


MALFORMED_COLUMN = "__sj_malformed"
"""Extra string column a tolerant source appends: NULL for a decoded record, the error
for a malformed one (whose declared columns are all NULL). The planner counts these rows
with Spark's ``observe`` and filters them out before the query sees the stream."""

_PER_RECORD_AFTER = 8  # malformed records in one slice before decoding record by record


def decode_tolerant(records: RecordSlice, schema: pa.Schema, fmt: str,
                    delimiter: str = ",") -> tuple[pa.RecordBatch, list[MalformedRecord]]:
    """Decode ``records`` like :func:`decode`, but set malformed records aside instead of
    failing (``"malformed.policy"`` skip or dead-letter, DESIGN §7).

    Returns the batch of the records that decode (in offset order) and the malformed
    ones, each with its raw key, value and timestamp. The fast whole-slice path is
    retried without each malformed record found; after a few, records are decoded one
    by one, so a slice of garbage costs linear time.

    Raises:
        ConnectorError: a problem that is not one record's (unknown format, a raw stream
            column that does not exist).
    """
    index = {off: i for i, off in enumerate(records.offsets)}
    keep = list(range(len(records.offsets)))
    bad: list[MalformedRecord] = []
    while len(bad) < _PER_RECORD_AFTER:
        try:
            return decode(_subset(records, keep), schema, fmt, delimiter), bad
        except MalformedRecord as exc:
            i = index[exc.offset]
            bad.append(_with_raw(exc, records, i))
            keep.remove(i)
    good = []
    for i in keep:
        try:
            decode(_subset(records, [i]), schema, fmt, delimiter)
            good.append(i)
        except MalformedRecord as exc:
            bad.append(_with_raw(exc, records, i))
    bad.sort(key=lambda b: b.offset)
    return decode(_subset(records, good), schema, fmt, delimiter), bad


def with_malformed(batch: pa.RecordBatch, bad: Sequence[MalformedRecord],
                   schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` plus one row per malformed record, in ``schema`` (the declared columns
    and :data:`MALFORMED_COLUMN` last): decoded rows carry NULL there, malformed rows
    NULL in every declared column and their error."""
    n = batch.num_rows
    arrays = []
    for f in schema:
        if f.name == MALFORMED_COLUMN:
            arrays.append(pa.array([None] * n + [b.reason for b in bad], type=f.type))
        else:
            col = batch.column(batch.schema.get_field_index(f.name))
            arrays.append(pa.concat_arrays([col, pa.nulls(len(bad), type=f.type)]))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _subset(records: RecordSlice, idx: Sequence[int]) -> RecordSlice:
    return RecordSlice(records.topic, records.partition,
                       [records.offsets[i] for i in idx], [records.values[i] for i in idx],
                       [records.keys[i] for i in idx], [records.timestamps[i] for i in idx])


def _with_raw(exc: MalformedRecord, records: RecordSlice, i: int) -> MalformedRecord:
    """``exc`` made again with the raw key, value and timestamp of record ``i``."""
    return MalformedRecord(exc.topic, exc.partition, exc.offset, exc.reason,
                           key=records.keys[i], value=records.values[i],
                           timestamp=records.timestamps[i])


# -- json --------------------------------------------------------------------------


def _decode_json(records: RecordSlice, schema: pa.Schema) -> pa.RecordBatch:
    values = records.values
    if all(v is not None and b"\n" not in v for v in values):
        try:
            table = pajson.read_json(
                io.BytesIO(b"\n".join(values)),  # type: ignore[arg-type]
                read_options=pajson.ReadOptions(block_size=1 << 24),
                parse_options=pajson.ParseOptions(
                    explicit_schema=schema, unexpected_field_behavior="infer"
                ),
            )
            declared = {n.lower() for n in schema.names}
            other_case = [n for n in table.column_names
                          if n not in schema.names and n.lower() in declared]
            if table.num_rows == len(values) and not other_case:
                return _one_batch(table.select(schema.names), schema)
            # a key differs from its column only in case: the per-record path matches it
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass  # fall through to the per-record path, which names the bad record
    return decode_json_records(records, schema)


def decode_json_records(records: RecordSlice, schema: pa.Schema) -> pa.RecordBatch:
    """The per-record JSON path: each value parsed by :func:`json.loads`, each column
    taken by :func:`_field` (exact key, else the first key equal ignoring case) and
    converted by :func:`_convert`. The reference the whole-slice paths must equal.

    Raises:
        MalformedRecord: the first record that is not a JSON object or whose value does
            not convert (names topic, partition and offset).
    """
    rows = []
    for offset, value in zip(records.offsets, records.values):
        try:
            obj = json.loads(value) if value is not None else None
            if not isinstance(obj, dict):
                raise ValueError("value is not a JSON object")
            rows.append({f.name: _convert(_field(obj, f.name), f.type) for f in schema})
        except (ValueError, TypeError, ArithmeticError) as exc:
            raise MalformedRecord(records.topic, records.partition, offset, str(exc)) from None
    return pa.RecordBatch.from_pylist(rows, schema=schema)


def _field(obj: dict, name: str):
    """The value of column ``name`` in a JSON object: the key spelled exactly, else the
    first key equal to it ignoring case (Hive's JSON SerDe and Spark match field names
    case-insensitively); None when no key matches."""
    if name in obj:
        return obj[name]
    lower = name.lower()
    for key, value in obj.items():
        if key.lower() == lower:
            return value
    return None


def _convert(value, typ: pa.DataType):
    """Convert one JSON value to the Python value Arrow expects for ``typ``."""
    if value is None:
        return None
    if pa.types.is_integer(typ):
        if isinstance(value, bool):
            raise ValueError(f"expected an integer, got {value!r}")
        if isinstance(value, float):
            if not value.is_integer():
                raise ValueError(f"expected an integer, got {value!r}")
            return int(value)
        return int(value)
    if pa.types.is_floating(typ):
        if isinstance(value, bool):
            raise ValueError(f"expected a number, got {value!r}")
        return float(value)
    if pa.types.is_boolean(typ):
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise ValueError(f"expected a boolean, got {value!r}")
    if pa.types.is_string(typ):
        return value if isinstance(value, str) else json.dumps(value)
    if pa.types.is_decimal(typ):
        return decimal.Decimal(str(value))
    if pa.types.is_timestamp(typ):
        if isinstance(value, (int, float)):
            return _dt.datetime.fromtimestamp(value / 1000.0, tz=_dt.timezone.utc)
        ts = _dt.datetime.fromisoformat(str(value))
        return ts if ts.tzinfo else ts.replace(tzinfo=_dt.timezone.utc)
    if pa.types.is_date(typ):
        return _dt.date.fromisoformat(str(value))
    if pa.types.is_binary(typ):
        return str(value).encode()
    return value


# -- delimited ---------------------------------------------------------------------


def _decode_delimited(records: RecordSlice, schema: pa.Schema, delimiter: str) -> pa.RecordBatch:
    values = [v if v is not None else b"" for v in records.values]
    if len(delimiter) == 1 and all(b"\n" not in v and b"\r" not in v for v in values):
        try:
            table = pacsv.read_csv(
                io.BytesIO(b"\n".join(values) + b"\n"),
                read_options=pacsv.ReadOptions(column_names=schema.names, block_size=1 << 24),
                parse_options=pacsv.ParseOptions(
                    delimiter=delimiter, quote_char=False, escape_char=False,
                    ignore_empty_lines=False,
                ),
                convert_options=pacsv.ConvertOptions(
                    column_types=schema, null_values=["", *_NULLS], strings_can_be_null=False,
                ),
            )
            if table.num_rows == len(values):
                return _one_batch(_hive_string_nulls(table), schema)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
    rows = []
    for offset, value in zip(records.offsets, values):
        fields = value.decode("utf-8", errors="replace").split(delimiter)
        if len(fields) > len(schema):
            raise MalformedRecord(
                records.topic, records.partition, offset,
                f"{len(fields)} fields, the stream declares {len(schema)} columns",
            )
        row = {}
        for f, text in zip(schema, fields + [None] * (len(schema) - len(fields))):
            try:
                row[f.name] = _parse_field(text, f.type)
            except (ValueError, ArithmeticError) as exc:
                raise MalformedRecord(
                    records.topic, records.partition, offset, f"column '{f.name}': {exc}"
                ) from None
        rows.append(row)
    return pa.RecordBatch.from_pylist(rows, schema=schema)


def _hive_string_nulls(table: pa.Table) -> pa.Table:
    """``\\N`` is NULL in string columns too (Hive), while an empty string stays ''."""
    import pyarrow.compute as pc

    for i, f in enumerate(table.schema):
        if pa.types.is_string(f.type):
            col = table.column(i)
            table = table.set_column(i, f, pc.if_else(pc.equal(col, _NULLS[0]),
                                                      pa.scalar(None, f.type), col))
    return table


def _parse_field(text: str | None, typ: pa.DataType):
    if text is None or text in _NULLS:
        return None
    if pa.types.is_string(typ):
        return text
    if text == "":
        return None
    if pa.types.is_integer(typ):
        return int(text)
    return _convert(text, typ) if not pa.types.is_floating(typ) else float(text)


# -- raw ---------------------------------------------------------------------------


def _decode_raw(records: RecordSlice, schema: pa.Schema) -> pa.RecordBatch:
    n = len(records.offsets)
    source = {
        "key": records.keys,
        "value": records.values,
        "topic": [records.topic] * n,
        "partition": [records.partition] * n,
        "offset": records.offsets,
        "timestamp": [
            _dt.datetime.fromtimestamp(t / 1000.0, tz=_dt.timezone.utc) if t is not None and t >= 0 else None
            for t in records.timestamps
        ],
    }
    arrays = []
    for f in schema:
        if f.name not in source:
            raise ConnectorError(
                f"raw stream column '{f.name}' is not one of: {', '.join(RAW_COLUMNS)}"
            )
        data = source[f.name]
        if f.name in ("key", "value") and pa.types.is_string(f.type):
            data = [d.decode("utf-8", errors="replace") if d is not None else None for d in data]
        arrays.append(pa.array(data, type=f.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _one_batch(table: pa.Table, schema: pa.Schema) -> pa.RecordBatch:
    table = table.cast(schema) if table.schema != schema else table
    batches = table.combine_chunks().to_batches()
    return batches[0] if batches else pa.RecordBatch.from_pylist([], schema=schema)
