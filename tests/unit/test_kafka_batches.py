"""The bulk record-batch parser (streamjob.connectors.kafka.batches) on bytes built with
kafka-python's own v2 batch builder (DefaultRecordBatchBuilder), checked record for
record against kafka-python's consumer-side parser (Fetcher.PartitionRecords) on the
same bytes: every codec, control batches, aborted transactions under read_committed,
compacted gaps, a batch starting before the fetch offset, a truncated trailing batch,
and what falls back (magic 1) or fails (CRC)."""

from __future__ import annotations

import random
import struct
from types import SimpleNamespace

import pytest

from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from streamjob.connectors.kafka import batches

pytestmark = pytest.mark.unit

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
T0 = 1_700_000_000_000


def batch(base: int, records, codec: int = 0, pid: int = -1, epoch: int = -1,
          transactional: bool = False, control: bool = False, log_append: bool = False,
          max_ts: int | None = None) -> bytes:
    """One v2 record batch at ``base`` of ``records`` ``(offset delta, timestamp, key,
    value, headers)``, built by kafka-python; the attribute bits kafka-python's builder
    does not set (control, log-append time) and the broker's fields (base offset, max
    timestamp for log-append time) are written as a broker would, CRC recomputed."""
    from crc32c import crc32c

    b = DefaultRecordBatchBuilder(2, codec, transactional, pid, epoch, 0 if pid >= 0 else -1,
                                  batch_size=1 << 30)
    for delta, ts, key, value, headers in records:
        assert b.append(delta, ts, key, value, headers) is not None
    raw = bytearray(b.build())
    struct.pack_into(">q", raw, 0, base)
    attrs = struct.unpack_from(">h", raw, 21)[0] | (0x20 if control else 0) | \
        (0x08 if log_append else 0)
    struct.pack_into(">h", raw, 21, attrs)
    if max_ts is not None:
        struct.pack_into(">q", raw, 35, max_ts)
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    return bytes(raw)


def marker(base: int, pid: int, abort: bool, epoch: int = 0) -> bytes:
    """A transaction marker (control batch, one control record: key = version 0, type
    0 ABORT / 1 COMMIT; value = version 0, coordinator epoch)."""
    key = struct.pack(">hh", 0, 0 if abort else 1)
    return batch(base, [(0, T0, key, struct.pack(">hi", 0, 0), [])], pid=pid, epoch=epoch,
                 transactional=True, control=True)


def reference(data: bytes, fetch_offset: int, read_committed: bool = False, aborted=()):
    """kafka-python's answer: [(offset, key, value, timestamp)] and its next offset."""
    from kafka.consumer.fetcher import Fetcher
    from kafka.protocol.consumer import IsolationLevel
    from kafka.record import MemoryRecords
    from kafka.structs import TopicPartition

    part = Fetcher.PartitionRecords(fetch_offset, TopicPartition("t", 0), MemoryRecords(data),
                                    check_crcs=True,
                                    isolation_level=IsolationLevel(int(read_committed)),
                                    aborted_transactions=list(aborted))
    return [(r.offset, r.key, r.value, r.timestamp) for r in part.take()], part.next_fetch_offset


def ours(data: bytes, fetch_offset: int, read_committed: bool = False, aborted=()):
    parsed = batches.parse(data, fetch_offset, read_committed=read_committed, aborted=aborted)
    c = parsed.columns
    return (list(zip(c.offsets.tolist(), c.keys(), c.values(), c.timestamps.tolist())),
            parsed.next_offset)


def assert_same(data: bytes, fetch_offset: int, **kw):
    got, want = ours(data, fetch_offset, **kw), reference(data, fetch_offset, **kw)
    assert got == want
    return got[0]


def varied_records(n: int, seed: int, gap: int = 1):
    """Records with null/empty/short/long (3-byte varint) keys and values, headers on
    some, timestamps going backwards too, offset deltas ``gap`` apart."""
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        key = None if i % 5 == 0 else (b"" if i % 11 == 0 else f"k{i}".encode())
        size = rnd.choice([0, 1, 60, 200, 20_000]) if i % 7 else None
        value = None if size is None else rnd.randbytes(size)
        headers = [("h", b"x"), ("empty", None)] if i % 4 == 0 else []
        out.append((i * gap, T0 + rnd.randrange(-5_000, 100_000), key, value, headers))
    return out


@pytest.mark.parametrize("codec", list(CODECS))
def test_every_codec_equals_kafka_python(codec):
    data = b"".join([batch(0, varied_records(40, 1), CODECS[codec]),
                     batch(40, varied_records(25, 2), CODECS[codec]),
                     batch(65, varied_records(300, 3), CODECS[codec])])
    rows = assert_same(data, 0)
    assert [r[0] for r in rows] == list(range(365))
    assert sum(r[2] is None for r in rows) > 0 and sum(r[1] is None for r in rows) > 0


def test_compacted_gaps_and_a_batch_starting_before_the_fetch_offset():
    # offsets 100, 103, 106, ... (compaction removed the others); the batch's last offset
    # delta stays, so the next fetch starts after it
    data = batch(100, varied_records(30, 4, gap=3)) + batch(400, varied_records(10, 5, gap=2))
    rows = assert_same(data, 120)
    assert rows[0][0] == 121 and rows[-1][0] == 418
    assert ours(data, 120)[1] == 419


def test_log_append_time_reports_the_batch_max_timestamp():
    data = batch(0, varied_records(20, 6), log_append=True, max_ts=T0 + 777)
    rows = assert_same(data, 0)
    assert {r[3] for r in rows} == {T0 + 777}


def test_truncated_trailing_batch_is_left_for_the_next_fetch():
    first, second = batch(0, varied_records(10, 7)), batch(10, varied_records(10, 8), 1)
    for cut in (5, 16, 40, len(second) - 1):
        data = first + second[:cut]
        rows = assert_same(data, 0)
        assert [r[0] for r in rows] == list(range(10))
        assert ours(data, 0)[1] == 10


def test_control_batches_are_never_records():
    pid = 7
    data = (batch(0, varied_records(5, 9), pid=pid, epoch=0, transactional=True)
            + marker(5, pid, abort=False) + batch(6, varied_records(3, 10)))
    for committed in (False, True):
        rows = assert_same(data, 0, read_committed=committed)
        assert [r[0] for r in rows] == [0, 1, 2, 3, 4, 6, 7, 8]
    assert ours(data, 0)[1] == 9


def test_aborted_transactions_are_dropped_under_read_committed_only():
    # producer 1 aborts offsets 0-3, producer 2 commits 4-6; producer 1 then commits 9-10
    data = b"".join([
        batch(0, varied_records(4, 11), pid=1, epoch=0, transactional=True),
        batch(4, varied_records(3, 12), pid=2, epoch=0, transactional=True),
        marker(7, 1, abort=True), marker(8, 2, abort=False),
        batch(9, varied_records(2, 13), pid=1, epoch=0, transactional=True),
        marker(11, 1, abort=False),
        batch(12, varied_records(2, 14)),    # not transactional
    ])
    aborted = [SimpleNamespace(producer_id=1, first_offset=0)]
    rows = assert_same(data, 0, read_committed=True, aborted=aborted)
    assert [r[0] for r in rows] == [4, 5, 6, 9, 10, 12, 13]
    rows = assert_same(data, 0, read_committed=False, aborted=aborted)
    assert [r[0] for r in rows] == [0, 1, 2, 3, 4, 5, 6, 9, 10, 12, 13]
    assert ours(data, 0, read_committed=True, aborted=aborted)[1] == 14


def test_corrupt_batch_fails_its_crc_check():
    data = bytearray(batch(50, [(i, T0, None, b"A" * 100, []) for i in range(10)]))
    data[-3] ^= 0xFF  # a byte of the last value
    with pytest.raises(batches.CorruptBatch, match="offset 50"):
        batches.parse(bytes(data), 50)
    assert len(batches.parse(bytes(data), 50, check_crcs=False).columns) == 10


def test_magic_1_message_sets_are_left_to_kafka_python():
    b = LegacyRecordBatchBuilder(magic=1, compression_type=0, batch_size=1 << 20)
    for i in range(3):
        b.append(i, timestamp=T0, key=None, value=b"v%d" % i)
    with pytest.raises(batches.Unhandled, match="magic 1"):
        batches.parse(bytes(b.build()), 0)


def test_a_record_that_does_not_parse_is_left_to_kafka_python():
    from crc32c import crc32c

    raw = bytearray(batch(0, [(0, T0, b"k", b"value", [])]))
    raw[61] = 0x40  # the record's length varint now says 32 bytes
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    with pytest.raises(batches.Unhandled):
        batches.parse(bytes(raw), 0)


def test_empty_response_and_empty_batches():
    assert ours(b"", 5) == ([], 5)
    # a batch whose records were all compacted away keeps its offsets
    empty = bytearray(batch(20, [(0, T0, None, b"x", [])]))
    struct.pack_into(">i", empty, 57, 0)   # record count 0 ...
    del empty[61:]                          # ... and no records
    struct.pack_into(">i", empty, 8, len(empty) - 12)
    struct.pack_into(">i", empty, 23, 4)   # last offset delta 4
    from crc32c import crc32c

    struct.pack_into(">I", empty, 17, crc32c(bytes(empty[21:])))
    assert ours(bytes(empty), 20) == reference(bytes(empty), 20) == ([], 25)


def test_the_fallback_parses_what_the_bulk_path_leaves_with_kafka_python():
    """PartitionFetcher hands bytes that parse() leaves (here a magic-1 message set) to
    kafka-python's parser, the same bytes: its records come back, cut at the range end."""
    from kafka.structs import TopicPartition

    from streamjob.connectors.kafka.fetch import PartitionFetcher

    b = LegacyRecordBatchBuilder(magic=1, compression_type=0, batch_size=1 << 20)
    for i in range(5):
        b.append(i, timestamp=T0 + i, key=b"k%d" % i, value=b"v%d" % i)
    data = bytes(b.build())
    fetcher = PartitionFetcher(None, TopicPartition("t", 0), settings={},
                               isolation_level="read_uncommitted", check_crcs=True, meta=True)
    got = fetcher._client_bytes(data, 1, 4, [])
    assert (got.offsets, got.keys, got.values, got.stamps) == (
        [1, 2, 3], [b"k1", b"k2", b"k3"], [b"v1", b"v2", b"v3"], [T0 + 1, T0 + 2, T0 + 3])
    assert got.next_offset == 5 and fetcher.counts == {"kafka-python bytes": 1}


def test_json_fast_path_checks_nulls_and_newlines_per_buffer():
    """The whole-slice JSON decoder refuses a slice with a null value or a value holding
    a newline (one check on the joined buffer): the per-record path then decodes it."""
    import pyarrow as pa

    from streamjob.connectors.kafka.decode import _JsonDecoder
    from streamjob.connectors.kafka.formats import RecordSlice

    dec = _JsonDecoder(pa.schema([pa.field("a", pa.int64())]))

    def run(values):
        n = len(values)
        return dec(RecordSlice("t", 0, list(range(n)), values, [None] * n, [T0] * n))

    assert run([b'{"a":1}', b'{"a":2}']).column(0).to_pylist() == [1, 2]
    assert run([b'{"a":1}', None]) is None
    assert run([b'{"a":1}', b'{"a":\n2}']) is None
    assert run([b'{"a":1}\n']) is None


def _random_fetch(draw, hs):
    """A fetch response drawn by hypothesis: batches of any codec, with or without
    transactions and markers, compacted gaps, any fetch offset, maybe truncated."""
    blob = hs.one_of(hs.none(), hs.binary(max_size=200))
    record = hs.tuples(blob, blob, hs.lists(hs.tuples(hs.text(max_size=5),
                                                       hs.binary(max_size=10)), max_size=2),
                       hs.integers(-10_000, 10_000))
    data, base, aborted = b"", draw(hs.integers(0, 1 << 40)), []
    for _ in range(draw(hs.integers(1, 4))):
        recs = draw(hs.lists(record, min_size=1, max_size=12))
        gaps = draw(hs.lists(hs.integers(1, 3), min_size=len(recs), max_size=len(recs)))
        deltas = [sum(gaps[:i]) for i in range(len(recs))]
        pid = draw(hs.sampled_from([-1, 5, 6]))
        if pid >= 0 and draw(hs.booleans()):
            aborted.append(SimpleNamespace(producer_id=pid, first_offset=base))
        data += batch(base, [(d, T0 + ts, k, v, h) for d, (k, v, h, ts) in zip(deltas, recs)],
                      draw(hs.sampled_from(list(CODECS.values()))), pid=pid,
                      epoch=0 if pid >= 0 else -1, transactional=pid >= 0)
        base += deltas[-1] + 1
        if pid >= 0 and draw(hs.booleans()):
            data += marker(base, pid, abort=draw(hs.booleans()))
            base += 1
    cut = draw(hs.integers(0, 80))
    return data[:len(data) - cut] if cut > 60 else data, aborted, base


def test_random_fetches_equal_kafka_python():
    """Property: on any fetch drawn by :func:`_random_fetch`, at any fetch offset and
    isolation level, the bulk parser returns kafka-python's records and next offset, or
    (only when no batch is complete) leaves the bytes to kafka-python, which finds none."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as hs

    @settings(max_examples=100, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(hs.data())
    def check(data):
        raw, aborted, end = data.draw(hs.builds(lambda: None).flatmap(
            lambda _: hs.composite(lambda draw: _random_fetch(draw, hs))()))
        first = struct.unpack_from(">q", raw, 0)[0] if len(raw) >= 8 else 0
        fetch_offset = data.draw(hs.integers(first, max(first, end)))
        committed = data.draw(hs.booleans())
        want = reference(raw, fetch_offset, read_committed=committed, aborted=aborted)
        try:
            got = ours(raw, fetch_offset, read_committed=committed, aborted=aborted)
        except batches.Unhandled:
            assert want == ([], fetch_offset)
        else:
            assert got == want

    check()
