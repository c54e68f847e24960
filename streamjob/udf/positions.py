"""The failing record's own position in a user function's error (issue 31, "Failures
name the function"; docs/functions.md).

When a job's select calls a scalar Python function on the rows of a Kafka source
stream, the planner (:func:`streamjob.planner.positions.add_positions`) passes each
call three hidden arguments after the user's: the string :data:`MARK` followed by the
topic, and the source's hidden columns :data:`PARTITION_COLUMN` and
:data:`OFFSET_COLUMN` (the record's partition and offset, which the Kafka source adds to
its rows for such a job). The function's wrapper (:mod:`streamjob.spark.udf`) takes
them off before calling the function, so the function sees only its own arguments, and
names the first failing row's record: ``topic t partition 0 offset 137``.

Nothing here imports Spark, the planner or a connector: it is the contract between them.
"""

from __future__ import annotations

__all__ = ["MARK", "PARTITION_COLUMN", "OFFSET_COLUMN", "POSITION_COLUMNS", "HIDDEN_ARGUMENTS",
           "position_ddl", "record_position"]

#: The first hidden argument starts with this text, then the topic.
MARK = "streamjob:record-at:"
#: The hidden columns of a Kafka source's rows: the record's partition and offset.
PARTITION_COLUMN = "__sj_partition"
OFFSET_COLUMN = "__sj_offset"
POSITION_COLUMNS = (PARTITION_COLUMN, OFFSET_COLUMN)
#: How many hidden arguments a call gets.
HIDDEN_ARGUMENTS = 3


def position_ddl() -> str:
    """The hidden columns as Spark DDL, to append to a source's schema."""
    return f"`{PARTITION_COLUMN}` INT, `{OFFSET_COLUMN}` BIGINT"


def record_position(columns) -> tuple[list, tuple | None]:
    """``columns`` (a call's pandas Series) split into the user's arguments and the
    hidden ones: ``(arguments, (topic, partitions, offsets))``, or ``(columns, None)``
    when the call has no hidden arguments."""
    if len(columns) < HIDDEN_ARGUMENTS:
        return list(columns), None
    mark = columns[-HIDDEN_ARGUMENTS]
    first = mark.iloc[0] if hasattr(mark, "iloc") and len(mark) else None
    if not isinstance(first, str) or not first.startswith(MARK):
        return list(columns), None
    return list(columns[:-HIDDEN_ARGUMENTS]), (first[len(MARK):], columns[-2], columns[-1])
