"""Bulk decoding of fetched Kafka record batches (message format v2, magic 2) into
columns: the executor's fast path (:func:`parse`), used by :mod:`.fetch`.

The format is Kafka's "Record Batch" (KIP-98; Kafka's ``DefaultRecordBatch`` and
``DefaultRecord``): a 61-byte batch header (base offset, length, partition leader epoch,
magic, CRC-32C, attributes, last offset delta, first and max timestamp, producer id and
epoch, base sequence, record count), then the records, compressed as a whole when the
attributes name a codec. A record is a varint length followed by attributes (int8 as a
varint), timestamp delta (varlong), offset delta (varint), key and value (varint length,
-1 for null, then the bytes) and headers (varint count, each a string key and a nullable
bytes value). Varints are zig-zag encoded, as Protocol Buffers'.

What is done per batch (Python): the header, the CRC-32C over attributes..end (the
native ``crc32c`` package), decompression (kafka-python's own ``kafka.codec`` functions,
so the same libraries: gzip, python-snappy, lz4, zstandard), control batches and aborted
transactions (below). Per record only one small loop runs in Python: it follows the
record lengths to find where each record starts. Every field is then decoded for all
records of the fetch at once with numpy (:func:`_varints`), and each record is checked
to end exactly where its length says, as kafka-python checks.

Rules, as Kafka's Java consumer (``CompletedFetch``) and kafka-python's
``Fetcher.PartitionRecords`` apply them:

- control batches (transaction markers) are never returned as records;
- with ``read_committed``, a transactional batch whose producer id has an aborted
  transaction starting at or before the batch's last offset (the fetch response's
  ``aborted_transactions``) is skipped, until that producer's ABORT marker;
- records below the fetch offset (a batch that starts before it) are dropped; offsets
  need not be contiguous (compaction);
- the next fetch starts after the last offset of the last complete batch (a compacted
  batch keeps its last offset); a truncated trailing batch (a fetch response may end in
  part of one) is ignored and fetched again next time.

Anything else (magic 0/1 message sets, an unknown codec or a missing codec library, a
record that does not parse) raises :class:`Unhandled`: the caller then parses the same
bytes with kafka-python (which decodes it or raises its own error). A CRC mismatch raises
:class:`CorruptBatch`.
"""

from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass

import numpy as np

HEADER = struct.Struct(">qiibIhiqqqhii")
"""Batch header: base offset, length, leader epoch, magic, CRC, attributes, last offset
delta, first timestamp, max timestamp, producer id, producer epoch, base sequence,
record count (61 bytes, big-endian)."""
_CRC_FROM = 21          # the CRC covers attributes (byte 21) .. end of batch
_LOG_OVERHEAD = 12      # base offset + length: ``length`` counts the bytes after these
_CODEC, _LOG_APPEND_TIME, _TRANSACTIONAL, _CONTROL = 0x07, 0x08, 0x10, 0x20
_PAD = bytes(10)        # a varint is at most 10 bytes: reads past the end stay in range


class Unhandled(Exception):
    """The bytes are not something :func:`parse` decodes (see the module docstring);
    the caller parses them with kafka-python instead."""


class CorruptBatch(Exception):
    """A record batch failed its CRC-32C check; ``offset`` is its base offset."""

    def __init__(self, offset: int) -> None:
        super().__init__(f"record batch at offset {offset} failed its CRC-32C check")
        self.offset = offset


@dataclass
class Columns:
    """The records of one fetch, in offset order, as columns.

    ``offsets``, ``timestamps`` (ms since the epoch; the batch's max timestamp for
    LOG_APPEND_TIME batches, as Kafka's consumer reports), and positions into ``data``
    (the record sections of all batches, decompressed and concatenated):
    ``key_pos``/``key_len`` and ``value_pos``/``value_len``, length -1 for null. All
    arrays are numpy int64 of the same length."""

    offsets: np.ndarray
    timestamps: np.ndarray
    data: bytes
    key_pos: np.ndarray
    key_len: np.ndarray
    value_pos: np.ndarray
    value_len: np.ndarray

    def __len__(self) -> int:
        return len(self.offsets)

    def values(self, lo: int = 0, hi: int | None = None) -> list:
        """Values of records ``lo..hi-1`` as bytes (None for a null value)."""
        return _slices(self.data, self.value_pos[lo:hi], self.value_len[lo:hi])

    def keys(self, lo: int = 0, hi: int | None = None) -> list:
        """Keys of records ``lo..hi-1`` as bytes (None for a null key)."""
        return _slices(self.data, self.key_pos[lo:hi], self.key_len[lo:hi])


def _slices(data: bytes, pos: np.ndarray, length: np.ndarray) -> list:
    ends = (pos + length).tolist()
    if len(length) and length.min() < 0:
        return [data[p:e] if e >= p else None for p, e in zip(pos.tolist(), ends)]
    return [data[p:e] for p, e in zip(pos.tolist(), ends)]


@dataclass
class Parsed:
    """What :func:`parse` found: ``columns`` (records at or after the fetch offset, not
    of control batches or aborted transactions) and ``next_offset`` (where the next
    fetch starts: after the last complete batch; the fetch offset when there was none)."""

    columns: Columns
    next_offset: int
    batches: int


def parse(records, fetch_offset: int, *, check_crcs: bool = True,
          read_committed: bool = False, aborted=()) -> Parsed:
    """Decode the ``records`` bytes of one partition of a Fetch response.

    ``fetch_offset``: the offset the fetch asked for (records below it are dropped).
    ``check_crcs``: verify each batch's CRC-32C. ``read_committed``: drop aborted
    transactions, given ``aborted`` (the response's ``aborted_transactions``: objects
    with ``producer_id`` and ``first_offset``).

    Raises:
        Unhandled: not magic-2 batches, a codec without its library, a malformed record.
        CorruptBatch: a CRC-32C mismatch (``check_crcs``).
    """
    crc32c = _crc32c() if check_crcs else None
    buf = memoryview(records).cast("B") if not isinstance(records, bytes) else records
    size, pos = len(buf), 0
    sections, meta = [], []   # record bytes and (count, base, first ts, max ts, log-append)
    next_offset, batches = fetch_offset, 0
    pending = deque(sorted(aborted or (), key=lambda t: t.first_offset))
    aborting: set[int] = set()
    while size - pos > 16:
        base, length = struct.unpack_from(">qi", buf, pos)
        if buf[pos + 16] != 2:
            raise Unhandled(f"magic {buf[pos + 16]} at offset {base}")
        end = pos + _LOG_OVERHEAD + length
        if end > size:
            break  # a truncated trailing batch: fetched again from next_offset
        if length < HEADER.size - _LOG_OVERHEAD:
            raise Unhandled(f"batch of {length} bytes at offset {base}")
        (_, _, _, _, crc, attrs, last_delta, first_ts, max_ts, pid, _, _,
         count) = HEADER.unpack_from(buf, pos)
        if check_crcs and crc32c(memoryview(buf)[pos + _CRC_FROM:end]) != crc:
            raise CorruptBatch(base)
        batches += 1
        next_offset = base + last_delta + 1
        body_at, pos = pos + HEADER.size, end
        if read_committed and pid >= 0:
            while pending and pending[0].first_offset <= base + last_delta:
                aborting.add(pending.popleft().producer_id)
            if attrs & _CONTROL:
                if _is_abort_marker(buf[body_at - HEADER.size:end]):
                    aborting.discard(pid)
            elif attrs & _TRANSACTIONAL and pid in aborting:
                continue
        if attrs & _CONTROL or count <= 0:
            continue
        body = memoryview(buf)[body_at:end]
        if attrs & _CODEC:
            body = _decompress(attrs & _CODEC, body)
        sections.append(body)
        meta.append((count, base, first_ts, max_ts, bool(attrs & _LOG_APPEND_TIME)))
    if batches == 0 and size - pos > 0:
        raise Unhandled("no complete record batch in the fetch response")
    columns = _records(sections, meta)
    if len(columns) and columns.offsets[0] < fetch_offset:
        columns = _take(columns, columns.offsets >= fetch_offset)
    return Parsed(columns, next_offset, batches)


def _crc32c():
    """The native CRC-32C (package ``crc32c``, a dependency), else kafka-python's own
    (pure Python, slow: ``checkCrcs=auto`` does not check without the native one)."""
    try:
        from crc32c import crc32c
    except ImportError:
        from kafka.record.util import calc_crc32c as crc32c
    return crc32c


def _is_abort_marker(batch) -> bool:
    """True if the control batch (its bytes) holds an ABORT marker (control record key:
    version int16, type int16; type 0 = ABORT, 1 = COMMIT), read with kafka-python."""
    from kafka.record.default_records import DefaultRecordBatch

    try:
        record = next(iter(DefaultRecordBatch(bytes(batch))))
    except Exception as exc:  # noqa: BLE001 - kafka-python then parses and names it
        raise Unhandled(f"control batch: {exc}") from None
    return bool(record.abort)


def _decompress(codec: int, body) -> bytes:
    """Decompress a batch's records with kafka-python's codec functions (the same
    libraries and framing it uses: xerial snappy, LZ4 frames, zstd without a size)."""
    from kafka import codec as c

    available = {1: c.has_gzip, 2: c.has_snappy, 3: c.has_lz4, 4: c.has_zstd}.get(codec)
    if available is None or not available():
        raise Unhandled(f"compression codec {codec} not available")
    if codec == 1:
        return c.gzip_decode(body)
    return {2: c.snappy_decode, 3: c.lz4_decode, 4: c.zstd_decode}[codec](body.tobytes())


def _record_starts(data: bytes, at: int, count: int, out: list) -> int:
    """Append the position of each of ``count`` records' length varint from ``at`` to
    ``out``; returns where the last record ends. The one per-record Python loop."""
    append, pos = out.append, at
    for _ in range(count):
        append(pos)
        b = data[pos]
        if b < 0x80:
            n, pos = b, pos + 1
        else:
            b2 = data[pos + 1]
            if b2 < 0x80:
                n, pos = (b & 0x7F) | (b2 << 7), pos + 2
            else:
                n, pos = _varint(data, pos)
        pos += (n >> 1) ^ -(n & 1)
    return pos


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """The unsigned (not yet zig-zag decoded) varint at ``pos`` and the position after."""
    value = shift = 0
    while True:
        b = data[pos]
        value |= (b & 0x7F) << shift
        pos += 1
        if b < 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise Unhandled("varint longer than 10 bytes")


def _varints(a: np.ndarray, pos: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Zig-zag varints of at most ``width`` bytes (5: int32, 10: int64) at positions
    ``pos`` of the byte array ``a`` (padded): (values int64, positions after them).
    Vectorised over records: one numpy pass per byte of the longest varint."""
    b = a[pos]
    more = b >= 0x80
    if not more.any():  # one byte each: the common case
        v = b.astype(np.int64)
        return (v >> 1) ^ -(v & 1), pos + 1
    u = (b & 0x7F).astype(np.uint64)
    size = np.ones(len(pos), np.int64)
    for k in range(1, width):
        idx = np.flatnonzero(more)
        if not len(idx):
            break
        bk = a[pos[idx] + k]
        u[idx] |= (bk & 0x7F).astype(np.uint64) << np.uint64(7 * k)
        size[idx] += 1
        more[idx] = bk >= 0x80
    if more.any():
        raise Unhandled("varint longer than its type allows")
    return (u >> np.uint64(1)).astype(np.int64) ^ -(u & np.uint64(1)).astype(np.int64), pos + size


def _records(sections: list, meta: list) -> Columns:
    """Decode every record of ``sections`` (record bytes per batch, with ``meta``)."""
    empty = np.zeros(0, np.int64)
    if not sections:
        return Columns(empty, empty, b"", empty, empty, empty, empty)
    data = b"".join(sections)
    starts: list[int] = []
    at = 0
    try:
        for body, (count, *_) in zip(sections, meta):
            end = at + len(body)
            if _record_starts(data, at, count, starts) != end:
                raise Unhandled("records do not fill their batch")
            at = end
    except IndexError:
        raise Unhandled("record runs past its batch") from None
    a = np.frombuffer(data + _PAD, np.uint8)
    pos = np.array(starts, np.int64)
    length, pos = _varints(a, pos, 5)
    rec_end = pos + length
    _, pos = _varints(a, pos, 5)                 # record attributes: unused
    ts_delta, pos = _varints(a, pos, 10)
    off_delta, pos = _varints(a, pos, 5)
    key_len, key_pos = _varints(a, pos, 5)
    pos = key_pos + np.maximum(key_len, 0)
    value_len, value_pos = _varints(a, pos, 5)
    pos = value_pos + np.maximum(value_len, 0)
    headers, pos = _varints(a, pos, 5)
    if (length < 0).any() or (headers < 0).any() or (key_len < -1).any() or \
            (value_len < -1).any():
        raise Unhandled("negative length in a record")
    for i in np.flatnonzero(headers).tolist():   # rare: walk the headers in Python
        pos[i] = _skip_headers(data, int(pos[i]), int(headers[i]))
    if (pos != rec_end).any():
        raise Unhandled("record size does not match its fields")
    counts = np.array([m[0] for m in meta], np.int64)
    per = np.array([m[1:4] for m in meta], np.int64)
    offsets = np.repeat(per[:, 0], counts) + off_delta
    stamps = np.repeat(per[:, 1], counts) + ts_delta
    if any(m[4] for m in meta):
        log_append = np.repeat(np.array([m[4] for m in meta]), counts)
        stamps = np.where(log_append, np.repeat(per[:, 2], counts), stamps)
    return Columns(offsets, stamps, data, key_pos, key_len, value_pos, value_len)


def _skip_headers(data: bytes, pos: int, count: int) -> int:
    """Position after ``count`` record headers at ``pos`` (key: string, value: bytes)."""
    for _ in range(count):
        for nullable in (False, True):
            n, pos = _varint(data, pos)
            n = (n >> 1) ^ -(n & 1)
            if n < -1 or (n == -1 and not nullable):
                raise Unhandled("bad record header")
            pos += max(n, 0)
    return pos


def _take(columns: Columns, mask: np.ndarray) -> Columns:
    return Columns(columns.offsets[mask], columns.timestamps[mask], columns.data,
                   columns.key_pos[mask], columns.key_len[mask], columns.value_pos[mask],
                   columns.value_len[mask])
