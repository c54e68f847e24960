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

from streamjob.exceptions import ConnectorError

_ENGINES: dict[str, Engine] = {}

#: Seconds to wait for a database to accept a connection (libpq ``connect_timeout``,
#: MySQL drivers' ``connect_timeout``). A server that accepts TCP and never answers
#: blocked START and DROP for minutes (issue 13 point 12).
CONNECT_TIMEOUT_S = 10
#: Milliseconds one statement may run (PostgreSQL ``statement_timeout``, MySQL drivers'
#: read/write timeouts): a batch's write that takes longer fails and the job fails over.
STATEMENT_TIMEOUT_MS = 300_000


def _timeouts(url: str) -> dict[str, Any]:
    """Driver ``connect_args`` with the connect and statement timeouts, unless the URL's
    query already sets them (its own values win)."""
    try:
        parsed = sa.engine.make_url(url)
    except Exception:  # noqa: BLE001 - create_engine reports the bad URL
        return {}
    backend, query = parsed.get_backend_name(), parsed.query
    if backend == "sqlite":
        return {"timeout": 30, "check_same_thread": False}  # seconds waiting for a lock
    args: dict[str, Any] = {}
    if backend == "postgresql":
        if "connect_timeout" not in query:
            args["connect_timeout"] = CONNECT_TIMEOUT_S
        if "options" not in query:
            args["options"] = f"-c statement_timeout={STATEMENT_TIMEOUT_MS}"
    elif backend in ("mysql", "mariadb"):
        for key, value in (("connect_timeout", CONNECT_TIMEOUT_S),
                           ("read_timeout", STATEMENT_TIMEOUT_MS // 1000),
                           ("write_timeout", STATEMENT_TIMEOUT_MS // 1000)):
            if key not in query:
                args[key] = value
    return args


def engine_for(url: str) -> Engine:
    """One pooled engine per URL per process, with timeouts: SQLite waits up to 30 s for
    a lock; PostgreSQL and MySQL give up connecting after :data:`CONNECT_TIMEOUT_S` s
    and a statement after :data:`STATEMENT_TIMEOUT_MS` ms (a URL's own
    ``connect_timeout``/``options`` win). The pool waits up to the connect timeout for
    a free connection.

    Raises:
        ConnectorError: the URL is malformed or names a driver that is not installed
            (the message shows the URL with its password masked).
    """
    eng = _ENGINES.get(url)
    if eng is None:
        from streamjob.security.resolve import resolve_url

        written, url = url, resolve_url(url, "a SQL table's \"url\"")  # password only
        kwargs: dict[str, Any] = {"connect_args": _timeouts(url)}
        if not url.startswith("sqlite"):
            kwargs["pool_timeout"] = CONNECT_TIMEOUT_S
        try:
            eng = sa.create_engine(url, **kwargs)
        except (SQLAlchemyError, ImportError, ValueError) as exc:
            raise ConnectorError(f"bad SQL table URL {_mask(written)}: {exc}") from None
        _ENGINES[written] = eng
    return eng


def _mask(url: str) -> str:
    """The URL fit for output (streamjob/sensitive.py: passwords with '/', '@', blanks,
    ``?password=``)."""
    from streamjob.sensitive import mask_url

    return mask_url(url)


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
