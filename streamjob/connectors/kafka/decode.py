"""Decoding on the executors: one slice of Kafka records into one Arrow record batch
(``_decoder``: strict or tolerant of malformed records, with dead letters), the
whole-slice Arrow JSON path (``_JsonDecoder``), and whether kafka-python checks CRCs
natively (``native_crc32c``). Used by :func:`.kafka_source.read_range`."""

from __future__ import annotations

from typing import Callable

from pyspark.sql.types import StructType


def native_crc32c() -> bool:
    """True when kafka-python verifies CRC-32C with the native ``crc32c`` package
    (cheap) rather than its pure-Python fallback (about a third of a read's time)."""
    try:
        from kafka.record import util

        return getattr(util, "crc32c_c", None) is not None
    except ImportError:
        return False


def _decoder(schema: StructType, fmt: str, delimiter: str,
             dead_letter: str | None) -> Callable:
    """``RecordSlice -> pa.RecordBatch`` for ``read_range``: strict (a malformed record
    raises :class:`.formats.MalformedRecord`) unless ``schema`` ends in the malformed
    column; tolerant decoders append malformed rows and write dead letters first. The
    returned function has ``tolerant`` (bool). JSON goes through :class:`_JsonDecoder`
    first; what it cannot take whole goes to :mod:`.formats`, which names bad records."""
    from pyspark.sql.pandas.types import to_arrow_schema

    from streamjob.connectors.kafka.formats import MALFORMED_COLUMN, decode, decode_tolerant, with_malformed

    arrow = to_arrow_schema(schema, timezone="UTC")  # TIMESTAMP: instants in UTC
    tolerant_stream = MALFORMED_COLUMN in arrow.names
    declared = arrow.remove(arrow.get_field_index(MALFORMED_COLUMN)) if tolerant_stream else arrow
    fast = _JsonDecoder(declared) if fmt == "json" else None

    if not tolerant_stream:
        def strict(records):
            batch = fast(records) if fast is not None else None
            return batch if batch is not None else decode(records, arrow, fmt, delimiter)

        strict.tolerant = False
        return strict
    writer = None
    if dead_letter:
        from streamjob.connectors.kafka.dead_letter import DeadLetterTarget, DeadLetterWriter

        writer = DeadLetterWriter(DeadLetterTarget.from_option(dead_letter))

    def tolerant(records):
        batch = fast(records) if fast is not None else None
        if batch is not None:
            return with_malformed(batch, [], arrow)
        batch, bad = decode_tolerant(records, declared, fmt, delimiter)
        if bad and writer is not None:
            writer.write(bad)
        return with_malformed(batch, bad, arrow)

    tolerant.tolerant = True
    return tolerant


_EXACT_FLOAT = 2 ** 53  # integers beyond this may have been rounded when read as float64


class _JsonDecoder:
    """Whole-slice JSON decoding with Arrow's reader, for slices that decode cleanly.

    JSON writers often put integer columns as floats (``517.0``: pandas does for any
    column with a null), which Arrow's reader refuses for an integer field, and the
    per-record path of :mod:`.formats` then costs ~30x more. So a second attempt reads
    integer fields as float64 and casts them back with Arrow's safe cast (a fraction or
    an overflow fails it), refusing values beyond 2**53 (they may have been rounded).
    The attempt that worked last is tried first. Returns None when neither works: the
    caller's per-record path then names the bad record, as before."""

    def __init__(self, schema):
        import pyarrow as pa

        self.schema = schema
        self.ints = [f.name for f in schema if pa.types.is_integer(f.type)]
        self.loose = pa.schema([pa.field(f.name, pa.float64()) if f.name in self.ints else f
                                for f in schema]) if self.ints else None
        self.prefer_loose = False
        self._declared = {n.lower(): n for n in schema.names}

    def _other_case(self, value: bytes) -> bool:
        """True if a key of this record equals a declared column only ignoring case:
        Arrow's reader would leave that column NULL, the per-record path matches it
        (issue 13 point 1). The first record of each slice is looked at."""
        import json

        try:
            obj = json.loads(value)
        except ValueError:
            return False  # the reader below refuses it and names it
        return isinstance(obj, dict) and any(
            k not in self.schema.names and k.lower() in self._declared for k in obj)

    def __call__(self, records):
        import pyarrow as pa

        values = records.values
        if not values:
            return None
        try:  # checks per buffer, not per record:
            data = b"\n".join(values)
        except TypeError:
            return None  # a null value
        if data.count(b"\n") != len(values) - 1:
            return None  # a value holding a newline: one record would be two lines
        if self._other_case(values[0]):
            return None
        order = [self.loose, self.schema] if self.prefer_loose else [self.schema, self.loose]
        for schema in order:
            if schema is None:
                continue
            try:
                batch = self._read(data, schema, len(values))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                continue
            if batch is not None:
                self.prefer_loose = schema is self.loose
                return batch
        return None

    def _read(self, data: bytes, schema, rows: int):
        import io

        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.json as pajson

        table = pajson.read_json(
            io.BytesIO(data), read_options=pajson.ReadOptions(block_size=max(1 << 20, len(data) + 1)),
            parse_options=pajson.ParseOptions(explicit_schema=schema,
                                              unexpected_field_behavior="ignore"))
        if table.num_rows != rows:
            return None
        table = table.select(self.schema.names).combine_chunks()
        if schema is self.loose:
            cols = []
            for f in self.schema:
                col = table.column(f.name)
                if f.name in self.ints:
                    biggest = pc.max(pc.abs(col)).as_py()
                    if biggest is not None and biggest > _EXACT_FLOAT:
                        return None
                    col = col.cast(f.type, safe=True)
                cols.append(col)
            table = pa.Table.from_arrays(cols, schema=self.schema)
        elif table.schema != self.schema:
            table = table.cast(self.schema)
        batches = table.to_batches()
        return batches[0] if len(batches) == 1 else pa.Table.from_batches(batches).combine_chunks().to_batches()[0]


class ColumnCheck:
    """``"missing.columns"="fail"`` for one partition's range of a micro-batch (issue 13):
    a declared column that no record of the range carries (absent, or NULL, in every
    record that decoded) fails the read before the batch reaches the sink.

    ``see(batch)`` notes the non-NULL columns of one decoded Arrow batch (malformed rows
    of a tolerant stream, which carry their error in :data:`.formats.MALFORMED_COLUMN`,
    are left out) and returns the batch; ``check(topic, partition, start, end)`` raises
    :class:`~streamjob.exceptions.ConnectorError` naming the topic, partition, offsets
    ``[start, end)`` and every such column, after the last batch of the range. The rule
    holds per partition and micro-batch, so a replay of the same range decides the same.
    """

    def __init__(self, names) -> None:
        from streamjob.connectors.kafka.formats import MALFORMED_COLUMN

        self.names = [n for n in names if n != MALFORMED_COLUMN]
        self.carried: set[str] = set()
        self.rows = 0

    def see(self, batch):
        """Note which declared columns ``batch`` (pa.RecordBatch) carries; returns it."""
        import pyarrow.compute as pc

        from streamjob.connectors.kafka.formats import MALFORMED_COLUMN

        table = batch
        if MALFORMED_COLUMN in batch.schema.names:
            table = batch.filter(pc.is_null(batch.column(MALFORMED_COLUMN)))
        self.rows += table.num_rows
        for name in self.names:
            if name not in self.carried and table.num_rows and \
                    table.column(name).null_count < table.num_rows:
                self.carried.add(name)
        return batch

    def check(self, topic: str, partition: int, start: int, end: int) -> None:
        """Raise ConnectorError when records were read and a declared column was in none."""
        from streamjob.exceptions import ConnectorError

        missing = [n for n in self.names if n not in self.carried]
        if self.rows and missing:
            cols = ", ".join(f"`{n}`" for n in missing)
            raise ConnectorError(
                f"no record of topic '{topic}' partition {partition} offsets {start}..{end - 1} "
                f"({self.rows} records) carries the declared column(s) {cols} "
                "(\"missing.columns\"=\"fail\"; JSON keys match the declared names "
                "case-insensitively): check the column's name against the records, or set "
                "\"missing.columns\"=\"count\" to count such batches instead")
