"""Counting what a source's records did not carry, with Spark observed metrics (DESIGN §7,
issue 13: nothing dropped or NULLed silently).

Two metrics per source, named after the stream, reported with each micro-batch's progress
(``StreamingQueryProgress.observedMetrics``) and read by the checkpoint recorder
(:func:`malformed_counts`, :func:`missing_columns`):

- ``malformed:<db.stream>`` (``malformed``: rows): malformed records a tolerant Kafka
  stream (``"malformed.policy"`` skip or dead-letter) set aside; they are then dropped.
- ``columns:<db.stream>`` (``rows``: records; ``c:<column>``: records with a non-NULL
  value of each declared column): a declared column whose count is 0 in a batch with
  records was carried by none of them (a misspelt JSON key reads as NULL). Kafka and file
  streams; Spark's rate source has no declared columns.

Observed metrics are computed inside the batch's own job (Spark's ``CollectMetrics``), so
they cost one count per column and no extra pass over the data.
"""

from __future__ import annotations

from typing import Sequence


COLUMNS_PREFIX = "columns:"
MALFORMED_PREFIX = "malformed:"


def observe_source(df, stream: str, malformed: str | None, counted: Sequence[str]):
    """``df`` (a source's streaming DataFrame) with its metrics attached, named after
    ``stream`` (its qualified name): with ``malformed`` (the column that flags a
    malformed record of a tolerant stream) malformed rows counted and dropped, with the
    column; then each column of ``counted`` (the declared columns) counted.

    Returns a DataFrame of the stream's declared columns only."""
    from pyspark.sql import functions as F

    if malformed is not None:
        flag = F.col(f"`{malformed}`")
        df = (df.observe(MALFORMED_PREFIX + stream, F.count(flag).alias("malformed"))
              .where(flag.isNull()).drop(malformed))
    if counted:
        counts = [F.count(F.col(f"`{c}`")).alias("c:" + c) for c in counted]
        df = df.observe(COLUMNS_PREFIX + stream, F.count(F.lit(1)).alias("rows"), *counts)
    return df


def malformed_counts(progress) -> dict[str, int]:
    """``{stream qualified name: malformed records}`` (> 0 only) of one batch's progress,
    from the observed metrics the planner attaches to tolerant Kafka sources."""
    out = {}
    for name, row in (getattr(progress, "observedMetrics", None) or {}).items():
        if name.startswith(MALFORMED_PREFIX):
            n = int(row["malformed"] or 0)
            if n:
                out[name.split(":", 1)[1]] = n
    return out


def missing_columns(progress) -> dict[str, list[str]]:
    """``{stream qualified name: [declared column, ...]}`` of one batch's progress: the
    columns that none of the batch's records of that stream carried (absent or NULL in
    all), from the ``columns:<stream>`` observed metrics of
    :mod:`streamjob.spark.observe`; streams without records in the batch are left out."""
    out = {}
    for name, row in (getattr(progress, "observedMetrics", None) or {}).items():
        if not name.startswith(COLUMNS_PREFIX):
            continue
        counts = row.asDict() if hasattr(row, "asDict") else dict(row)
        if int(counts.get("rows") or 0) > 0:
            cols = [k[2:] for k, v in counts.items() if k.startswith("c:") and not v]
            if cols:
                out[name.split(":", 1)[1]] = cols
    return out
