"""Engines and column types of the SQL sink: one pooled SQLAlchemy engine per URL per
process (:func:`engine_for`), URLs shown with their password masked (:func:`_mask`), and
the SQLAlchemy column type of a declared StreamSQL type (:func:`sql_type`), which the
sink creates a missing table with."""

from __future__ import annotations

import re
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from ..exceptions import ConnectorError

_ENGINES: dict[str, Engine] = {}


def engine_for(url: str) -> Engine:
    """One pooled engine per URL per process (SQLite: 30 s busy timeout).

    Raises:
        ConnectorError: the URL is malformed or names a driver that is not installed
            (the message shows the URL with its password masked).
    """
    eng = _ENGINES.get(url)
    if eng is None:
        kwargs: dict[str, Any] = {}
        if url.startswith("sqlite"):
            kwargs["connect_args"] = {"timeout": 30, "check_same_thread": False}
        try:
            eng = sa.create_engine(url, **kwargs)
        except (SQLAlchemyError, ImportError, ValueError) as exc:
            raise ConnectorError(f"bad SQL table URL {_mask(url)}: {exc}") from None
        _ENGINES[url] = eng
    return eng


def _mask(url: str) -> str:
    try:
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - any unparsable URL is shown masked wholesale
        return re.sub(r":[^:@/]+@", ":***@", url)


def _norm(type_text: str) -> str:
    return re.sub(r"\s+", "", type_text).lower()


_DECIMAL = re.compile(r"^(?:decimal|numeric|dec)(?:\((\d+)(?:,(\d+))?\))?$")
_SIZED_STRING = re.compile(r"^(?:var)?char\((\d+)\)$")
_COMPLEX = re.compile(r"^(?:array|map|struct)<")


def sql_type(type_text: str) -> sa.types.TypeEngine:
    """The SQLAlchemy column type for a StreamSQL type (``decimal`` alone is
    ``decimal(10,0)`` as in Hive; complex types are stored as JSON text)."""
    t = _norm(type_text)
    simple = {
        "tinyint": sa.SmallInteger(), "byte": sa.SmallInteger(), "smallint": sa.SmallInteger(),
        "short": sa.SmallInteger(), "int": sa.Integer(), "integer": sa.Integer(),
        "bigint": sa.BigInteger(), "long": sa.BigInteger(),
        "float": sa.Float(), "real": sa.Float(), "double": sa.Double(),
        "boolean": sa.Boolean(), "bool": sa.Boolean(), "string": sa.Text(), "date": sa.Date(),
        "timestamp": sa.DateTime(timezone=True), "timestamp_ntz": sa.DateTime(timezone=False),
        "binary": sa.LargeBinary(),
    }
    if t in simple:
        return simple[t]
    m = _DECIMAL.match(t)
    if m:
        return sa.Numeric(int(m.group(1) or 10), int(m.group(2) or 0))
    m = _SIZED_STRING.match(t)
    if m:
        return sa.String(int(m.group(1)))
    return sa.Text()
