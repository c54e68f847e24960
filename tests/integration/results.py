"""Reading result tables and comparing them with the batch result: the flights example's
two tables row by row, and any table as a multiset (:func:`compare`, the chaos tests)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import sqlalchemy as sa

from streamjob.connectors.files.table import read_table

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


# -- any table against a batch result, as multisets (chaos tests) ------------------------


def sql_table(url: str, table: str) -> pd.DataFrame:
    """Every row of a SQL table (the sink's own database)."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return pd.read_sql_table(table, conn)
    finally:
        engine.dispose()


def parquet_table(location: str | Path) -> pd.DataFrame:
    """The committed rows of a Parquet file table (Spark's manifest honoured)."""
    return read_table(str(location)).to_pandas()


def _key(value):
    return None if value is None or (isinstance(value, float) and value != value) else value


def row_counts(df: pd.DataFrame, cols) -> Counter:
    """How often each row (of ``cols``; NaN read as NULL) occurs in ``df``."""
    if df.empty and not set(cols) <= set(df.columns):
        return Counter()
    return Counter(tuple(_key(v) for v in r) for r in df[list(cols)].itertuples(index=False, name=None))


@dataclass(frozen=True)
class MultisetDiff:
    """A table against the rows it should hold: ``lost`` rows (expected copies missing),
    ``duplicated`` (copies beyond the expected count of an expected row) and
    ``unexpected`` (rows that should not be there at all)."""

    want: int
    got: int
    lost: int
    duplicated: int
    unexpected: int

    @property
    def exact(self) -> bool:
        return self.lost == self.duplicated == self.unexpected == 0

    def __str__(self) -> str:
        return (f"{self.got} rows, batch result {self.want}: {self.lost} lost, "
                f"{self.duplicated} duplicated, {self.unexpected} unexpected")


def compare(got: pd.DataFrame, want: pd.DataFrame, cols, times: int = 1) -> MultisetDiff:
    """``got`` against ``times`` copies of every row of ``want`` (multiset equality)."""
    have = row_counts(got, cols)
    need = Counter({k: n * times for k, n in row_counts(want, cols).items()})
    lost = sum((need - have).values())
    extra = have - need
    duplicated = sum(n for k, n in extra.items() if k in need)
    unexpected = sum(n for k, n in extra.items() if k not in need)
    return MultisetDiff(sum(need.values()), sum(have.values()), lost, duplicated, unexpected)
