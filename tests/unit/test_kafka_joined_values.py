"""The bulk path's values without a bytes object per record
(streamjob.connectors.kafka.values): the newline-joined buffer built with numpy from the
fetched bytes equals ``b"\\n".join`` of the values kafka-python's parser returns, on
random fetches (every codec, null, empty and long values, keys, headers, several
batches); LazyValues behaves as the list of values (index, slice, concat, iteration);
the JSON decoder gives the same answer on LazyValues as on the list, clean or not; the
read loop's chunking (read._Pending) cuts batches equal to slicing the concatenation; a
new decoder tries the attempt that worked last in the process first."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from streamjob.connectors.kafka import batches
from streamjob.connectors.kafka.fetch import Fetched
from streamjob.connectors.kafka.formats import RecordSlice
from streamjob.connectors.kafka.values import LazyValues, join_values

from .test_kafka_batches import CODECS, T0, batch, reference

pytestmark = pytest.mark.unit

SETTINGS = dict(max_examples=150, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

_value = hs.one_of(hs.none(), hs.just(b""), hs.binary(max_size=40), hs.binary(min_size=150, max_size=300))
_record = hs.tuples(hs.one_of(hs.none(), hs.binary(max_size=8)), _value,
                    hs.lists(hs.tuples(hs.text(max_size=3), hs.one_of(hs.none(), hs.binary(max_size=5))),
                             max_size=2))


@hs.composite
def fetches(draw):
    """Fetch bytes of 1-4 batches (any codec) and kafka-python's values for them."""
    data, base = b"", 0
    for _ in range(draw(hs.integers(1, 4))):
        recs = draw(hs.lists(_record, min_size=1, max_size=15))
        data += batch(base, [(i, T0 + i, k, v, h) for i, (k, v, h) in enumerate(recs)],
                      draw(hs.sampled_from(list(CODECS.values()))))
        base += len(recs)
    want = [r[2] for r in reference(data, 0)[0]]
    return data, want


def _joined(values: list):
    try:
        return b"\n".join(values)
    except TypeError:
        return None


@settings(**SETTINGS)
@given(fetches(), hs.data())
def test_joined_buffer_equals_joining_the_values(fetch, data):
    raw, want = fetch
    cols = batches.parse(raw, 0).columns
    assert cols.values() == want
    assert join_values(cols.data, cols.value_pos, cols.value_len) == _joined(want)
    lo = data.draw(hs.integers(0, len(want)))
    hi = data.draw(hs.integers(lo, len(want)))
    got = join_values(cols.data, cols.value_pos[lo:hi], cols.value_len[lo:hi])
    assert got == _joined(want[lo:hi])
    # LazyValues over ranges of this fetch and a plain list (a fallback's chunk)
    cut = data.draw(hs.integers(0, len(want)))
    extra = data.draw(hs.lists(_value, max_size=3))
    lazy = LazyValues.concat([LazyValues([(cols, 0, cut)]), extra,
                              LazyValues([(cols, cut, len(want))])])
    plain = want[:cut] + extra + want[cut:]
    assert len(lazy) == len(plain)
    assert lazy.joined() == _joined(plain)
    if plain:
        i = data.draw(hs.integers(-len(plain), len(plain) - 1))
        assert lazy.peek(i % len(plain)) == plain[i] and lazy[i] == plain[i]
    a = data.draw(hs.integers(0, len(plain)))
    b = data.draw(hs.integers(a, len(plain)))
    assert lazy[a:b] == plain[a:b] and lazy[a:b].joined() == _joined(plain[a:b])
    assert list(lazy) == plain and lazy[::2] == plain[::2]


def test_lazy_values_make_no_bytes_per_record_until_asked():
    raw = batch(0, [(i, T0, None, b'{"a":%d}' % i, []) for i in range(50)])
    lazy = LazyValues([(batches.parse(raw, 0).columns, 0, 50)])
    assert lazy.joined() == b"\n".join(b'{"a":%d}' % i for i in range(50))
    assert lazy._list is None and lazy.peek(3) == b'{"a":3}' and lazy._list is None
    assert lazy[10:20].joined() == b"\n".join(b'{"a":%d}' % i for i in range(10, 20))
    assert lazy._list is None
    assert lazy[49] == b'{"a":49}' and lazy._list is not None  # indexing: the list, once
    with pytest.raises(IndexError):
        lazy[50]
    with pytest.raises(IndexError):
        lazy.peek(50)


JSON_VALUES = hs.one_of(
    hs.none(), hs.just(b""), hs.just(b"{"), hs.just(b'{"a":\n1}'), hs.just(b"[1]"),
    hs.builds(lambda a, b, key: b'{"%s":%s,"b":"%s"}' % (key.encode(), a.encode(), b.encode()),
              hs.sampled_from(["1", "2.0", "2.5", "null", '"x"', "9007199254740993"]),
              hs.text(alphabet="xyz\u00e9", max_size=3), hs.sampled_from(["a", "A", "c"])))


@settings(**SETTINGS)
@given(hs.lists(JSON_VALUES, min_size=1, max_size=12), hs.integers(1, 12))
def test_json_decoder_answers_the_same_on_lazy_values(values, cut):
    """Same batch (or the same refusal) from values given as a list and as LazyValues
    over fetched bytes, in two chunks."""
    from streamjob.connectors.kafka import decode as dec

    raw = batch(0, [(i, T0, None, v, []) for i, v in enumerate(values)])
    cols = batches.parse(raw, 0).columns
    cut = min(cut, len(values))
    def fresh():  # a new one each time: a per-record path makes a LazyValues' list
        return LazyValues.concat([LazyValues([(cols, 0, cut)]),
                                  LazyValues([(cols, cut, len(values))])])

    schema = pa.schema([pa.field("a", pa.int64()), pa.field("b", pa.string())])
    n = len(values)
    out = []
    for vals in (values, fresh()):
        dec._LOOSE_WORKED.clear()
        got = dec._JsonDecoder(schema)(RecordSlice("t", 0, list(range(n)), vals, [None] * n, [T0] * n))
        out.append(None if got is None else got.to_pylist())
    assert out[0] == out[1]
    # the whole decoders of read_range, strict (a malformed record fails, named) and
    # tolerant (malformed rows carry their error), on both kinds of values
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from streamjob.connectors.kafka.formats import MALFORMED_COLUMN, MalformedRecord

    fields = [StructField("a", LongType()), StructField("b", StringType())]
    for tolerant in (False, True):
        spark_schema = StructType(fields + [StructField(MALFORMED_COLUMN, StringType())]
                                  if tolerant else fields)
        out = []
        for vals in (values, fresh()):
            dec._LOOSE_WORKED.clear()
            decoder = dec._decoder(spark_schema, "json", ",", None)
            try:
                got = decoder(RecordSlice("t", 0, list(range(n)), vals, [None] * n, [T0] * n))
                out.append(got.to_pylist())
            except MalformedRecord as exc:
                out.append(str(exc))
        assert out[0] == out[1]


def test_pending_chunks_cut_batches_like_slicing_the_concatenation():
    from streamjob.connectors.kafka.read import _Pending

    chunks, offsets, values, at = [], [], [], 0
    for size in (5, 1, 17, 3, 9):
        raw = batch(at, [(i, T0 + i, b"k%d" % i, b"v%d" % (at + i), []) for i in range(size)])
        cols = batches.parse(raw, at).columns
        lazy = size % 2 == 1  # mixed: bulk chunks and a list chunk (a fallback)
        vals = LazyValues([(cols, 0, size)]) if lazy else cols.values()
        chunks.append(Fetched(cols.offsets.tolist(), vals, cols.keys(), cols.timestamps.tolist(),
                              at + size, "bulk"))
        offsets += cols.offsets.tolist()
        values += cols.values()
        at += size
    for batch_rows in (1, 4, 7, 35, 100):
        pending, got = _Pending(), []
        for c in chunks:
            pending.add(c)
            while pending.rows >= batch_rows:
                got.append(pending.take(batch_rows))
        if pending.rows:
            got.append(pending.take(pending.rows))
        assert [len(o) for o, *_ in got] == [len(offsets[i:i + batch_rows])
                                            for i in range(0, len(offsets), batch_rows)]
        assert sum((o for o, *_ in got), []) == offsets
        assert sum((list(v) for _, v, *_ in got), []) == values
        assert all(v.joined() == b"\n".join(values[i * batch_rows:(i + 1) * batch_rows])
                   for i, (_, v, *_) in enumerate(got))
        assert sum((k for _, _, k, _ in got), []) == [b"k%d" % (o - s) for s, n in
                                                      zip(np.cumsum([0, 5, 1, 17, 3]), (5, 1, 17, 3, 9))
                                                      for o in range(s, s + n)]


def test_a_new_decoder_tries_the_attempt_that_worked_last_first(monkeypatch):
    """Integers written as floats: the first decoder of the process reads twice (exact
    schema refused, then float64-and-cast), a later one (a new task) once; same rows."""
    from streamjob.connectors.kafka import decode as dec

    dec._LOOSE_WORKED.clear()
    schema = pa.schema([pa.field("a", pa.int32())])
    calls = []
    real = dec._JsonDecoder._arrow
    monkeypatch.setattr(dec._JsonDecoder, "_arrow",
                        staticmethod(lambda *a: calls.append(1) or real(*a)))
    values = [b'{"a":%d.0}' % i for i in range(5)]
    sl = RecordSlice("t", 0, list(range(5)), values, [None] * 5, [T0] * 5)
    first = dec._JsonDecoder(schema)(sl)
    assert len(calls) == 2
    again = dec._JsonDecoder(schema)(sl)
    assert len(calls) == 3 and again.to_pylist() == first.to_pylist() == [{"a": i} for i in range(5)]
    exact = [b'{"a":%d}' % i for i in range(5)]  # still right when the data changes
    assert dec._JsonDecoder(schema)(RecordSlice("t", 0, list(range(5)), exact, [None] * 5,
                                                [T0] * 5)).to_pylist() == first.to_pylist()
    dec._LOOSE_WORKED.clear()
