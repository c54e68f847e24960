import datetime as dt

import pyarrow as pa
import pytest

from streamjob.connectors.formats import MalformedRecord, RecordSlice, decode
from streamjob.types import arrow_schema

COLS = [{"name": "id", "type": "int"}, {"name": "name", "type": "string"},
        {"name": "x", "type": "double"}, {"name": "ok", "type": "boolean"},
        {"name": "ts", "type": "timestamp"}]
SCHEMA = arrow_schema(COLS)


def rs(values):
    n = len(values)
    return RecordSlice("t", 3, list(range(100, 100 + n)), values, [None] * n, [0] * n)


def test_json_fast_path_types_nulls_and_extra_fields():
    b = decode(rs([b'{"id":1,"name":"a","x":1.5,"ok":true,"ts":"2013-01-01T05:00:00","extra":1}',
                   b'{"id":2,"name":null,"x":2}']), SCHEMA, "json")
    assert b.num_rows == 2
    rows = b.to_pylist()
    assert rows[0]["id"] == 1 and rows[0]["x"] == 1.5 and rows[0]["ok"] is True
    assert rows[0]["ts"] == dt.datetime(2013, 1, 1, 5, tzinfo=dt.timezone.utc)
    assert rows[1] == {"id": 2, "name": None, "x": 2.0, "ok": None, "ts": None}


def test_json_slow_path_converts_strings_and_multiline_values():
    b = decode(rs([b'{"id": "7",\n "x": "2.5", "ok": "false"}']), SCHEMA, "json")
    assert b.to_pylist()[0] == {"id": 7, "name": None, "x": 2.5, "ok": False, "ts": None}


def test_json_malformed_record_named_by_topic_partition_offset():
    with pytest.raises(MalformedRecord, match="topic 't' partition 3 offset 101"):
        decode(rs([b'{"id":1}', b'{"id":'], ), SCHEMA, "json")
    with pytest.raises(MalformedRecord, match="offset 100: value is not a JSON object"):
        decode(rs([b'[1,2]']), SCHEMA, "json")


def test_delimited_any_delimiter_nulls_and_short_rows():
    schema = arrow_schema(COLS[:3])
    b = decode(rs([b"1\x01a\x011.5", b"2\x01\\N\x01", b"3"]), schema, "delimited", "\x01")
    assert b.to_pylist() == [
        {"id": 1, "name": "a", "x": 1.5},
        {"id": 2, "name": None, "x": None},
        {"id": 3, "name": None, "x": None},
    ]


def test_delimited_bad_field_and_too_many_fields():
    schema = arrow_schema(COLS[:3])
    with pytest.raises(MalformedRecord, match="offset 100: column 'id'"):
        decode(rs([b"x,a,1"]), schema, "delimited")
    with pytest.raises(MalformedRecord, match="4 fields, the stream declares 3 columns"):
        decode(rs([b"1,a,1,9"]), schema, "delimited")


def test_raw_columns():
    schema = pa.schema([("value", pa.string()), ("partition", pa.int32()), ("offset", pa.int64())])
    b = decode(rs([b"hello"]), schema, "raw")
    assert b.to_pylist() == [{"value": "hello", "partition": 3, "offset": 100}]
