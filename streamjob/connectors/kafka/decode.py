"""Decoding on the executors: one slice of Kafka records into one Arrow record batch
(``_decoder``: strict or tolerant of malformed records, with dead letters), the
whole-slice Arrow JSON path (``_JsonDecoder``: keys in another case than declared
included, with the per-record path's result or not at all), and whether kafka-python checks CRCs
natively (``native_crc32c``). Used by :func:`.read.read_range`."""

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

_LOOSE_WORKED: dict[str, bool] = {}
"""Per declared schema (its text), whether the float64-then-cast attempt of
:class:`_JsonDecoder` worked last in this process: a Python worker's next task (a new
decoder) tries it first. Only the order of the attempts depends on it, not the result."""


class _JsonDecoder:
    """Whole-slice JSON decoding with Arrow's reader, for slices that decode cleanly.

    **Keys.** A column takes the key spelled exactly as declared, else the first key equal
    to it ignoring case (:func:`.formats._field`, docs "missing.columns"), while Arrow's
    reader matches field names exactly. So each declared column is read under the one
    spelling of its key in the slice, which is then renamed to the declared name. The
    spellings are guessed from the first record (its keys through :func:`json.loads`) and
    proven by the same read: Arrow is given the guessed spellings as the explicit schema
    and ``unexpected_field_behavior="infer"``, so every other top-level key of any record
    of the slice, even one whose value is always null, comes back as a column of its own,
    named by the key as decoded (``\\u`` escapes resolved). A column whose declared name
    equals such a key ignoring case (Python's ``str.lower``, as the per-record path) has
    a second spelling in the slice: which key wins then depends on each record (exact
    first, else the first in key order), so the slice is declined. A column absent from
    the first record is read under its declared name; when another spelling shows up, the
    read is repeated once with that one (the declared name then shows up if present). A
    record holding one key twice fails Arrow's reader (declined; :func:`json.loads` keeps
    the last). With one spelling per column in the slice, Arrow's value of that key is
    the per-record path's. Declined slices (None) go to :mod:`.formats`, record by record;
    so does every slice of a stream declaring two columns equal ignoring case.
    Cost: the undeclared keys are parsed into columns and dropped (about 40% more than
    ignoring them when most keys are undeclared, nothing when all are declared), and
    undeclared keys whose values change JSON type between records (number, then string)
    fail the read, so such slices are decoded record by record.

    **Integers.** JSON writers often put integer columns as floats (``517.0``: pandas
    does for any column with a null), which Arrow's reader refuses for an integer field,
    and the per-record path of :mod:`.formats` then costs ~30x more. So a second attempt
    reads integer fields as float64 and casts them back with Arrow's safe cast (a fraction
    or an overflow fails it), refusing values beyond 2**53 (they may have been rounded).
    The attempt that worked last (in this process, for this schema: a failed attempt
    costs about as much as one that works) is tried first. Returns None when neither works: the
    caller's per-record path then names the bad record, as before.

    ``schema``: the declared columns (pa.Schema); ``__call__(RecordSlice)`` returns a
    pa.RecordBatch of that schema or None."""

    def __init__(self, schema):
        import pyarrow as pa

        self.schema = schema
        self.ints = [f.name for f in schema if pa.types.is_integer(f.type)]
        self.loose = pa.schema([pa.field(f.name, pa.float64()) if f.name in self.ints else f
                                for f in schema]) if self.ints else None
        self._key = str(schema)
        self._lower = [n.lower() for n in schema.names]
        # two declared columns equal ignoring case: which key goes where is per record
        self._distinct = len(set(self._lower)) == len(self._lower)

    def _spellings(self, value: bytes) -> tuple[list[str], list[bool]]:
        """Per declared column, the key of this record it takes (the per-record rule) or
        the declared name when none; and whether that key is in the record."""
        import json

        try:
            obj = json.loads(value)
        except ValueError:
            obj = None  # the reader below refuses it and the per-record path names it
        keys = list(obj) if isinstance(obj, dict) else []
        spelt, seen = [], []
        for name, lower in zip(self.schema.names, self._lower):
            key = name if name in keys else next((k for k in keys if k.lower() == lower), None)
            spelt.append(key if key is not None else name)
            seen.append(key is not None)
        return spelt, seen

    def __call__(self, records):
        import pyarrow as pa

        values = records.values
        if not len(values) or not self._distinct:
            return None
        joined = getattr(values, "joined", None)  # the bulk path's: no bytes per record
        if joined is not None:
            data = joined()
            if data is None:
                return None  # a null value
        else:
            try:  # checks per buffer, not per record:
                data = b"\n".join(values)
            except TypeError:
                return None  # a null value
        if data.count(b"\n") != len(values) - 1:
            return None  # a value holding a newline: one record would be two lines
        peek = getattr(values, "peek", values.__getitem__)  # LazyValues: no list
        spelt, seen = self._spellings(peek(0))
        loose_first = _LOOSE_WORKED.get(self._key, False)
        order = [self.loose, self.schema] if loose_first else [self.schema, self.loose]
        for schema in order:
            if schema is None:
                continue
            try:
                batch = self._read(data, schema, len(values), list(spelt), list(seen))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                continue
            if batch is not None:
                _LOOSE_WORKED[self._key] = schema is self.loose
            return batch  # None: declined for its keys, whatever the types
        return None

    def _read(self, data: bytes, schema, rows: int, spelt: list[str], seen: list[bool]):
        """Read ``data`` under the spellings ``spelt``; None when a column has two
        spellings in the slice (or the row count is off). Raises Arrow's errors."""
        for _ in range(2):  # at most one retry, with a spelling found by the first read
            table = self._arrow(data, schema, spelt)
            if table.num_rows != rows:
                return None
            named = set(spelt)
            extra = [c for c in table.column_names if c not in named]
            retry = False
            for i, lower in enumerate(self._lower):
                others = [c for c in extra if c.lower() == lower]
                if not others:
                    continue
                if seen[i] or len(others) > 1:
                    return None  # two spellings of one column in the slice
                spelt[i], seen[i], retry = others[0], True, True
            if not retry:
                return self._finish(table.select(spelt), schema)
        return None

    @staticmethod
    def _arrow(data, schema, spelt: list[str]):
        """Arrow's JSON reader over ``data`` (bytes or bytearray, not copied)."""
        import pyarrow as pa
        import pyarrow.json as pajson

        named = pa.schema([f.with_name(s) for f, s in zip(schema, spelt)])
        return pajson.read_json(
            pa.BufferReader(data), read_options=pajson.ReadOptions(block_size=max(1 << 20, len(data) + 1)),
            parse_options=pajson.ParseOptions(explicit_schema=named,
                                              unexpected_field_behavior="infer"))

    def _finish(self, table, schema):
        """The declared columns' table (in declared order, under their keys) as one batch of
        the declared schema, integers read as float64 cast back (None if unsafe)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        table = table.rename_columns(self.schema.names).combine_chunks()
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
