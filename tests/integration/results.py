"""Reading the flights example's two result tables and comparing them with the batch result."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import sqlalchemy as sa

from streamjob.connectors.file_table import read_table

LATE_COLS = ["year", "month", "day", "carrier", "flight", "origin", "dest", "dep_delay", "arr_delay"]


def carrier_delays(home: Path) -> pd.DataFrame:
    engine = sa.create_engine(f"sqlite:///{home / 'flights.db'}")
    with engine.connect() as conn:
        df = pd.read_sql_table("carrier_delays", conn)
    engine.dispose()
    return df


def late_flights(home: Path) -> pd.DataFrame:
    return read_table(str(home / "warehouse" / "default" / "late_flights")).to_pandas()


def _rows(df: pd.DataFrame, cols) -> list[tuple]:
    return sorted(tuple(None if pd.isna(v) else v for v in r)
                  for r in df[cols].itertuples(index=False, name=None))


def assert_matches_batch(home: Path, expected: dict) -> None:
    """Every row of the batch result, no extra, no duplicate, in both tables."""
    got = carrier_delays(home).sort_values(["carrier", "month"]).reset_index(drop=True)
    want = expected["carrier_delays"].sort_values(["carrier", "month"]).reset_index(drop=True)
    assert len(got) == len(want), f"carrier_delays has {len(got)} rows, batch result {len(want)}"
    assert list(got["carrier"]) == list(want["carrier"])
    assert list(got["month"]) == list(want["month"])
    assert list(got["airline"]) == list(want["airline"])
    assert list(got["flights"]) == list(want["flights"]), "flight counts differ (lost or doubled)"
    pd.testing.assert_series_equal(got["avg_dep_delay"], want["avg_dep_delay"], check_names=False,
                                   rtol=1e-9)
    pd.testing.assert_series_equal(got["max_arr_delay"], want["max_arr_delay"], check_names=False)

    late = late_flights(home)
    want_late = expected["late_flights"]
    assert len(late) == len(want_late), (
        f"late_flights has {len(late)} rows, batch result {len(want_late)}")
    assert _rows(late, LATE_COLS) == _rows(want_late, LATE_COLS)
