"""The flights as JSON records (tools/streamjob_tools/dev/flights.py), as every Kafka test, the demo
and the benchmark replay them: pandas' JSON writer gives the bytes json.dumps gives."""

from __future__ import annotations

import json
import math

import pytest

from streamjob_tools.dev import flights as nyc

pytestmark = pytest.mark.unit


def _reference(df) -> list[bytes]:
    """One ``json.dumps`` per row, NaN as null (the writer flight_records replaced)."""
    out = []
    for row in df.itertuples(index=False, name=None):
        obj = {c: None if isinstance(v, float) and math.isnan(v) else
               (v.item() if hasattr(v, "item") else v) for c, v in zip(df.columns, row)}
        out.append(json.dumps(obj, separators=(",", ":")).encode())
    return out


def test_records_equal_json_dumps_of_each_row_with_nan_as_null():
    import pandas as pd

    df = pd.read_csv(nyc.data_dir() / "flights.csv.zip", nrows=30_000)  # as nyc.flights()
    cancelled = df[df["dep_time"].isna()]  # NaN in four columns
    assert len(cancelled) > 100
    sample = df.iloc[::20]
    for part in (cancelled, sample):
        assert nyc.flight_records(part) == _reference(part)
    first = json.loads(nyc.flight_records(cancelled.head(1))[0])
    assert first["dep_time"] is None and first["carrier"] and list(first) == list(df.columns)
