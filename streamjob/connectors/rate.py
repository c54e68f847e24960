"""A rate stream as a :class:`~streamjob.connectors.sources.StreamSource`: Spark's rate
source, ``rows_per_second`` rows of (timestamp, value), never running out of input."""

from __future__ import annotations

from .source_base import QuietSource, Reader


class RateStreamSource(QuietSource):
    """A rate stream (:class:`~streamjob.connectors.spec.RateSourceSpec`)."""

    identifier = "rate"
    fixed_columns = frozenset({"timestamp", "value"})  # Spark's (timestamp, value bigint)
    observes_columns = False  # its columns are Spark's own, always present
    bounded = False

    def __init__(self, spec) -> None:
        self.spec = spec

    def reader(self, columns, *, start: str | None, max_records: int,
               group_id: str | None, dead_letter=None) -> Reader:
        return Reader("rate", {"rowsPerSecond": str(self.spec.rows_per_second)})

    def describe(self, *, group_id: str | None, dead_letter_table: str | None,
                 checkpointed: bool, offsets: dict, checkpoint_id: str | None) -> dict:
        return dict(connector=self.identifier,
                    location=f"{self.spec.rows_per_second} rows per second",
                    starts_from="value 0 at the first start, then from its checkpoint")
