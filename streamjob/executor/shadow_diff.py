"""The comparison of a shadow run (issue 30 point 4; docs/upgrades.md "Shadow runs"):
what the old query wrote for an input range against what the new query wrote for the
same range, key by key for a keyed sink (its primary key) and as multisets otherwise.

Pure Python over rows (dicts of column -> value); no Spark, no database.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import math
from collections import Counter
from typing import Any, Iterable, Mapping, Sequence

__all__ = ["SAMPLES", "compare"]

#: At most this many sample rows are kept of each difference (issue 30 point 4).
SAMPLES = 20


def _norm(value: Any) -> Any:
    """A value as compared and shown: Decimal and float as float (NaN equal to NaN),
    datetimes and dates as ISO text, bytes as hex, anything else as is."""
    if isinstance(value, decimal.Decimal):
        value = float(value)
    if isinstance(value, float):
        return "NaN" if math.isnan(value) else value
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    return value


def _row(row: Mapping[str, Any], columns: Sequence[str]) -> tuple:
    return tuple(_norm(row.get(c)) for c in columns)


def compare(old: Iterable[Mapping[str, Any]], new: Iterable[Mapping[str, Any]],
            key: Sequence[str] = (), samples: int = SAMPLES) -> dict:
    """Compare the rows the old query wrote (``old``) with those the new query wrote
    (``new``) for the same input range.

    Rows are compared over the union of both sides' columns (a column one side lacks is
    None there: a new query may add a column). With ``key`` (the sink's primary key,
    column names) rows are matched by key: a key only in ``old`` is ``only_old``, only in
    ``new`` is ``only_new``, in both with other values ``changed`` (for each key the
    last row wins, as an upsert leaves it). Without a key, both are multisets of whole
    rows: ``only_old`` is old minus new and ``only_new`` new minus old, each row as
    often as it is in excess; ``changed`` is always empty.

    Returns:
        ``{"keyed": bool, "key": [..], "columns": [..], "old_rows": int, "new_rows":
        int, "same": int, "only_old": {"count": int, "samples": [row, ..]},
        "only_new": {...}, "changed": {"count": int, "samples": [{"key": {..}, "old":
        row, "new": row, "columns": [changed column names]}, ..]}}``: counts in rows,
        at most ``samples`` samples each (rows as dicts of normalised values: decimals
        and floats as floats, times as ISO text), in a stable order (sorted by their
        text).
    """
    old, new = list(old), list(new)
    columns: list[str] = []
    for row in old + new:
        for c in row:
            if c not in columns:
                columns.append(c)
    key = list(key)

    def as_dict(values: tuple) -> dict:
        return dict(zip(columns, values))

    def top(rows: list) -> list:
        return sorted(rows, key=repr)[:samples]

    out = {"keyed": bool(key), "key": key, "columns": columns, "old_rows": len(old),
           "new_rows": len(new)}
    if key:
        before = {_row(r, key): _row(r, columns) for r in old}
        after = {_row(r, key): _row(r, columns) for r in new}
        only_old = [before[k] for k in before if k not in after]
        only_new = [after[k] for k in after if k not in before]
        changed = []
        for k in before:
            if k in after and before[k] != after[k]:
                diff = [c for c, a, b in zip(columns, before[k], after[k]) if a != b]
                changed.append((k, before[k], after[k], diff))
        out["same"] = sum(1 for k in before if k in after and before[k] == after[k])
        out["only_old"] = {"count": len(only_old), "samples": [as_dict(r) for r in top(only_old)]}
        out["only_new"] = {"count": len(only_new), "samples": [as_dict(r) for r in top(only_new)]}
        out["changed"] = {"count": len(changed), "samples": [
            {"key": dict(zip(key, k)), "old": as_dict(a), "new": as_dict(b), "columns": d}
            for k, a, b, d in sorted(changed, key=lambda t: repr(t[0]))[:samples]]}
        return out
    before = Counter(_row(r, columns) for r in old)
    after = Counter(_row(r, columns) for r in new)
    only_old, only_new = before - after, after - before
    out["same"] = sum((before & after).values())
    out["only_old"] = {"count": sum(only_old.values()),
                       "samples": [as_dict(r) for r in top(list(only_old.elements()))]}
    out["only_new"] = {"count": sum(only_new.values()),
                       "samples": [as_dict(r) for r in top(list(only_new.elements()))]}
    out["changed"] = {"count": 0, "samples": []}
    return out
