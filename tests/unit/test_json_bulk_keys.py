"""The whole-slice JSON decoder of Kafka streams (``decode._JsonDecoder``) against the
per-record path (``formats.decode_json_records``): keys match declared columns exact
spelling first, else the first key equal ignoring case (docs "missing.columns"); the bulk
path must give the same batch or decline the slice (None), never a different one."""

import json

import pyarrow as pa
import pytest

from streamjob.connectors.kafka.decode import _JsonDecoder
from streamjob.connectors.kafka.formats import MalformedRecord, RecordSlice, decode_json_records

pytestmark = pytest.mark.unit


def _slice(values):
    n = len(values)
    return RecordSlice("t", 0, list(range(n)), values, [None] * n, [0] * n)


def _per_record(schema, values):
    try:
        return decode_json_records(_slice(values), schema)
    except MalformedRecord:
        return None


def test_a_later_record_spelt_in_another_case_is_not_read_as_null():
    """The first record has exact keys, the third spells `id` as `ID`: the bulk decoder
    looked at the first record only and Arrow read NULL for the third one's id (on the
    main of 2026-11-25), where the per-record path reads 3."""
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    values = [b'{"id":1,"name":"a"}', b'{"id":2,"name":"b"}', b'{"ID":3,"name":"c"}']
    got = _JsonDecoder(schema)(_slice(values))
    want = _per_record(schema, values)
    assert want.to_pylist()[2] == {"id": 3, "name": "c"}
    assert got is None or got.to_pylist() == want.to_pylist()


def test_keys_in_another_case_than_declared_are_read_in_bulk():
    """Nexmark's `dateTime` into a column stored as `datetime`: the whole slice goes
    through Arrow (not declined), with the per-record path's values."""
    schema = pa.schema([("auction", pa.int64()), ("datetime", pa.timestamp("us", tz="UTC"))])
    values = [json.dumps({"auction": i, "dateTime": f"2015-07-15 00:00:0{i}.000"}).encode()
              for i in range(5)]
    got = _JsonDecoder(schema)(_slice(values))
    assert got is not None
    assert got.schema == schema
    assert got.to_pylist() == _per_record(schema, values).to_pylist()
