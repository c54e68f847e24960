"""A table's ``"primary.key"`` against its declared columns: the one check the SQL and
Delta table specs share (a key column must be declared, so an upsert can match on it)."""

from __future__ import annotations

from collections.abc import Sequence

from ..exceptions import ValidationError


def check_primary_key(primary_key: Sequence[str], columns, table: str) -> None:
    """Every column of ``primary_key`` (lower-case names) is one of ``columns`` (the
    declared ``[{"name", "type"}]``) of ``table`` (``db.name``, for the message).

    Raises:
        ValidationError: the first undeclared key column, ``key`` ``"primary.key"``.
    """
    declared = {c["name"].lower() for c in columns}
    missing = [k for k in primary_key if k not in declared]
    if missing:
        raise ValidationError(f"primary key column '{missing[0]}' is not a column of "
                              f"{table} ({', '.join(c['name'] for c in columns)})",
                              key="primary.key", bad_value=True)
