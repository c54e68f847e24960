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


COLUMNS = pa.schema([("id", pa.int64()), ("datetime", pa.string()), ("price", pa.float64()),
                     ("ok", pa.bool_()), ("k", pa.string())])


def _json_key(draw, hs, key: str) -> str:
    """``key`` as JSON text: plain, or with some characters as ``\\u`` escapes."""
    out = []
    for ch in key:
        out.append(f"\\u{ord(ch):04{draw(hs.sampled_from(['x', 'X']))}}"
                   if draw(hs.integers(0, 5)) == 0 else json.dumps(ch)[1:-1])
    return '"' + "".join(out) + '"'


def _record(draw, hs) -> bytes:
    """One JSON object over COLUMNS' names: keys in random case (the Kelvin sign for
    `k` too), some twice or in two spellings, some missing, nulls, values holding
    key-like text and escapes, undeclared keys; sometimes not a valid record at all."""
    values = {"id": hs.one_of(hs.none(), hs.integers(-2**40, 2**40)),
              "datetime": hs.one_of(hs.none(), hs.text(max_size=6),
                                    hs.sampled_from(['"ID":', 'dateTime', '{"k":1}', '\\u0069d'])),
              "price": hs.one_of(hs.none(), hs.floats(-1e6, 1e6, allow_nan=False), hs.integers(-99, 99)),
              "ok": hs.one_of(hs.none(), hs.booleans()),
              "k": hs.one_of(hs.none(), hs.text(max_size=4), hs.integers(0, 9))}
    spellings = {"id": ["id", "ID", "Id"], "datetime": ["datetime", "dateTime", "DATETIME"],
                 "price": ["price", "Price"], "ok": ["ok", "OK", "oK"], "k": ["k", "K", "\u212a"]}
    names = draw(hs.lists(hs.sampled_from([*spellings, "x", "nested"]), max_size=8))
    parts = []
    for name in names:
        if name == "x":
            parts.append(f'"x":{json.dumps(draw(hs.sampled_from(["ID", "a", "Price"])))}')
        elif name == "nested":
            parts.append('"nested":{"ID":7,"Datetime":"z"}')
        else:
            key = draw(hs.sampled_from(spellings[name]))
            parts.append(f"{_json_key(draw, hs, key)}:{json.dumps(draw(values[name]))}")
    text = "{" + ",".join(parts) + "}"
    return (text if draw(hs.integers(0, 30)) else text[:-1]).encode()


def test_the_bulk_decoder_equals_the_per_record_path_or_declines():
    """Property: for any slice, the whole-slice decoder's batch equals the per-record
    path's, or it declines (None); a slice the per-record path refuses is declined."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as hs

    taken = []

    @settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
    @given(hs.data())
    def check(data):
        uniform = data.draw(hs.booleans())  # one spelling per column: the bulk case
        if uniform:
            casing = {n: data.draw(hs.sampled_from([n, n.upper(), n.title()])) for n in COLUMNS.names}
            rows = data.draw(hs.lists(hs.fixed_dictionaries(
                {n: hs.one_of(hs.none(), hs.just(v)) for n, v in
                 [("id", 1), ("datetime", "t"), ("price", 2.5), ("ok", True), ("k", "v")]}),
                min_size=1, max_size=6))
            values = [json.dumps({casing[n]: v for n, v in r.items()
                                  if data.draw(hs.booleans())}).encode() for r in rows]
        else:
            values = data.draw(hs.lists(hs.composite(lambda draw: _record(draw, hs))(),
                                        min_size=1, max_size=6))
        got = _JsonDecoder(COLUMNS)(_slice(values))
        want = _per_record(COLUMNS, values)
        if got is not None:
            taken.append(uniform)
            assert want is not None, values
            assert got.schema == COLUMNS
            assert got.to_pylist() == want.to_pylist(), values

    check()
    assert True in taken and False in taken  # both kinds of slice were taken in bulk too


NEXMARK = {  # examples/nexmark/streams_kafka.sql's columns as the catalog stores them
    "bid": "auction:i,bidder:i,price:i,channel:s,url:s,datetime:t,extra:s",
    "auction": "id:i,itemname:s,description:s,initialbid:i,reserve:i,datetime:t,expires:t,"
               "seller:i,category:i,extra:s",
    "person": "id:i,name:s,emailaddress:s,creditcard:s,city:s,state:s,datetime:t,extra:s"}


@pytest.mark.parametrize("kind", sorted(NEXMARK))
def test_nexmark_events_decode_alike_in_bulk_and_record_by_record(kind):
    """The events of the Nexmark generator (camelCase keys as Nexmark's DDL: `dateTime`,
    `itemName`, `emailAddress`), into the streams' columns as the catalog stores them
    (lower-case): taken in bulk, with the per-record path's values, no column all NULL."""
    from streamjob_tools.dev.nexmark.generator import NexmarkConfig, generate
    from streamjob_tools.dev.nexmark.output import json_lines

    values = json_lines(generate(NexmarkConfig(seed=19), 0, 5_000))[kind]
    assert b'"dateTime":' in values[0]
    types = {"i": pa.int64(), "s": pa.string(), "t": pa.timestamp("us", tz="UTC")}
    schema = pa.schema([(c.split(":")[0], types[c.split(":")[1]]) for c in NEXMARK[kind].split(",")])
    got = _JsonDecoder(schema)(_slice(values))
    assert got is not None and got.num_rows == len(values) > 50
    assert all(col.null_count < got.num_rows for col in got.columns)
    assert got.to_pylist() == _per_record(schema, values).to_pylist()
