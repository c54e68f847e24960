import datetime as dt
import json

import pyarrow as pa
import pytest

from streamjob.connectors.kafka.formats import MalformedRecord, RecordSlice, decode
from streamjob.columntypes import arrow_schema

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


# -- malformed records set aside ("malformed.policy" skip / dead-letter) ---------------

from streamjob.connectors.kafka.dead_letter import DeadLetterTarget, check_columns, rows as dl_rows
from streamjob.connectors.kafka.formats import MALFORMED_COLUMN, decode_tolerant, with_malformed
from streamjob.exceptions import ValidationError

pytestmark = pytest.mark.unit


def _slice(values, start=100):
    n = len(values)
    return RecordSlice("t", 1, list(range(start, start + n)), values, [b"k"] * n, [1_700_000_000_000] * n)


@pytest.mark.parametrize("bad_every", [3, 1, 1000])
def test_decode_tolerant_keeps_good_records_and_names_each_bad_one(bad_every):
    values = [b"junk" if i % bad_every == 0 else json.dumps({"a": i, "b": str(i)}).encode()
              for i in range(40)]
    schema = pa.schema([("a", pa.int32()), ("b", pa.string())])
    batch, bad = decode_tolerant(_slice(values), schema, "json")
    expected_bad = [100 + i for i in range(40) if i % bad_every == 0]
    assert [b.offset for b in bad] == expected_bad
    assert batch.column(0).to_pylist() == [i for i in range(40) if i % bad_every]
    assert all(b.value == b"junk" and b.key == b"k" and b.partition == 1 for b in bad)
    full = pa.schema(list(schema) + [pa.field(MALFORMED_COLUMN, pa.string())])
    out = with_malformed(batch, bad, full).to_pylist()
    assert len(out) == 40
    assert [r for r in out if r[MALFORMED_COLUMN]] == [
        {"a": None, "b": None, MALFORMED_COLUMN: b.reason} for b in bad]


def test_decode_tolerant_delimited_reports_field_count_and_type():
    schema = pa.schema([("a", pa.int64()), ("b", pa.string())])
    batch, bad = decode_tolerant(_slice([b"1,x", b"2,y,z", b"q,r", b"4,"]), schema, "delimited")
    assert batch.to_pylist() == [{"a": 1, "b": "x"}, {"a": 4, "b": ""}]
    assert [(b.offset, b.reason) for b in bad] == [
        (101, "3 fields, the stream declares 2 columns"),
        (102, "column 'a': invalid literal for int() with base 10: 'q'")]


def test_dead_letter_rows_take_declared_columns_by_name():
    target = DeadLetterTarget("sqlite://", "dlq", ({"name": "offset", "type": "BIGINT"},
                                                     {"name": "value", "type": "STRING"},
                                                     {"name": "key", "type": "BINARY"},
                                                     {"name": "error", "type": "STRING"}),
                              ("offset",), "default.s")
    schema = pa.schema([("a", pa.int32())])
    _, bad = decode_tolerant(_slice([b"\xff\xfe", b'{"a": 1}']), schema, "json")
    assert dl_rows(target, bad) == [
        {"offset": 100, "value": "\ufffd\ufffd", "key": b"k", "error": bad[0].reason}]
    assert DeadLetterTarget.from_option(target.to_option()) == target
    with pytest.raises(ValidationError, match="payload"):
        check_columns("default.dlq", [{"name": "payload", "type": "STRING"}])


def test_json_fields_match_declared_camel_case_columns_then_ignoring_case():
    """Issue 13 point 1: `dateTime` and `itemName` were read as NULL without a word."""
    schema = pa.schema([("auction", pa.int64()), ("dateTime", pa.string()), ("itemName", pa.string())])
    exact = decode(rs([b'{"auction":1,"dateTime":"2024-01-01","itemName":"lamp"}']), schema, "json")
    assert exact.to_pylist() == [{"auction": 1, "dateTime": "2024-01-01", "itemName": "lamp"}]
    other_case = decode(rs([b'{"AUCTION":2,"datetime":"2024-01-02","ITEMNAME":"vase","x":[1]}',
                            b'{"auction":3,"dateTime":"2024-01-03","itemName":"cup"}']), schema, "json")
    assert other_case.to_pylist() == [
        {"auction": 2, "dateTime": "2024-01-02", "itemName": "vase"},
        {"auction": 3, "dateTime": "2024-01-03", "itemName": "cup"}]


def test_column_check_fails_a_range_that_no_record_carries_a_column_of():
    """Issue 13 point 1 ("missing.columns"="fail"): judged over the whole range of a
    partition, malformed rows of a tolerant stream left out."""
    from streamjob.connectors.kafka.decode import ColumnCheck
    from streamjob.exceptions import ConnectorError

    schema = arrow_schema([{"name": "auction", "type": "bigint"},
                           {"name": "itemName", "type": "string"}])
    records = RecordSlice("bids", 0, [10, 11], [b'{"auction": 1, "item_name": "a"}',
                                                 b'{"auction": 2}'], [None] * 2, [None] * 2)
    check = ColumnCheck(schema.names)
    check.see(decode(records, schema, "json"))
    with pytest.raises(ConnectorError, match=r"topic 'bids' partition 0 offsets 10\.\.11 "
                                             r"\(2 records\) carries the declared column\(s\) `itemName`"):
        check.check("bids", 0, 10, 12)
    carried = RecordSlice("bids", 0, [12], [b'{"auction": 3, "ITEMNAME": "b"}'], [None], [None])
    check.see(decode(carried, schema, "json"))  # a later batch of the range carries it
    check.check("bids", 0, 10, 13)
    ColumnCheck(schema.names).check("bids", 0, 10, 10)  # no records: nothing to judge

    tolerant = pa.schema(list(schema) + [pa.field(MALFORMED_COLUMN, pa.string())])
    batch, bad = decode_tolerant(RecordSlice("bids", 0, [0, 1], [b'{"auction": 1, "itemName": "a"}',
                                                                  b"nope"], [None] * 2, [None] * 2),
                                 schema, "json")
    check = ColumnCheck(tolerant.names)
    check.see(with_malformed(batch, bad, tolerant))
    check.check("bids", 0, 0, 2)  # the malformed row's NULLs do not count against itemName
