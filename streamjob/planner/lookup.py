"""What the planner reads from the catalog: kinds, declared columns, event time.

One :class:`Lookup` serves one planning pass and caches what it read, so a query that
names a stream five times reads its record once.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from ..catalog.records import FunctionInfo, StreamInfo, TableInfo
from ..exceptions import ValidationError


class Lookup:
    """The catalog as the planner sees it.

    Args:
        catalog: a :class:`~streamjob.catalog.Catalog` (anything with ``get_stream`` and
            ``get_table`` returning records or None).
    """

    def __init__(self, catalog: Any) -> None:
        self.catalog = catalog
        self._streams: dict[tuple[str, str], StreamInfo | None] = {}
        self._tables: dict[tuple[str, str], TableInfo | None] = {}
        self._functions: dict[str, dict[str, FunctionInfo]] = {}
        #: the user functions the queries analyzed with this lookup call (a job's query
        #: and the derived streams beneath it), by ``(database, name)``
        self.called: dict[tuple[str, str], FunctionInfo] = {}

    def stream(self, database: str, name: str) -> StreamInfo | None:
        """The stream ``database.name``, or None."""
        key = (database, name)
        if key not in self._streams:
            self._streams[key] = self.catalog.get_stream(database, name)
        return self._streams[key]

    def table(self, database: str, name: str) -> TableInfo | None:
        """The table ``database.name``, or None."""
        key = (database, name)
        if key not in self._tables:
            self._tables[key] = self.catalog.get_table(database, name)
        return self._tables[key]

    def functions(self, database: str) -> dict[str, FunctionInfo]:
        """The user functions of ``database`` by name (docs/functions.md); none for a
        catalog without functions."""
        if database not in self._functions:
            listing = getattr(self.catalog, "list_functions", None)
            self._functions[database] = {f.name: f for f in (listing(database) if listing else ())}
        return self._functions[database]

    def note_calls(self, functions) -> None:
        """Record ``functions`` (FunctionInfo) as called (:attr:`called`)."""
        for f in functions:
            self.called[(f.database, f.name)] = f

    def kind(self, database: str, name: str) -> str | None:
        """``"stream"``, ``"table"`` or None (no such object)."""
        if self.stream(database, name) is not None:
            return "stream"
        if self.table(database, name) is not None:
            return "table"
        return None

    def columns(self, database: str, name: str) -> tuple[dict[str, Any], ...]:
        """The declared (or, for a derived stream, inferred) ``{"name", "type"}`` columns."""
        obj = self.stream(database, name) or self.table(database, name)
        return tuple(obj.columns) if obj is not None else ()

    def event_time(self, database: str, name: str, _seen=None) -> tuple[str, str] | None:
        """``(column, delay)`` of a stream with event time, or None (processing time).

        A source stream has event time when it declares both ``"watermark.column"`` and
        ``"watermark.delay"`` (DESIGN §7). A derived stream inherits its inputs' event
        time when every stream it reads directly has event time on a column of the same
        name and the derived stream keeps a column of that name (Spark carries the
        watermark through projections and filters). A window stream (a derived stream
        with a STREAMWINDOW) has event time on the column that selects the ``window``
        struct, if any (Spark carries the watermark on it; the delay is then
        ``"0 seconds"``: its rows are final when emitted), else none.

        Raises:
            ValidationError: a source stream declares one of the two properties only.
        """
        st = self.stream(database, name)
        if st is None:
            return None
        if not st.is_derived:
            p = {k.lower(): v for k, v in st.properties.items()}
            column, delay = p.get("watermark.column"), p.get("watermark.delay")
            if column and delay:
                return str(column).lower(), str(delay)
            if column or delay:
                raise ValidationError(
                    f"stream {st.qualified_name} declares only one of \"watermark.column\" and "
                    f"\"watermark.delay\"; declare both for event time, or neither for "
                    f"processing time")
            return None
        if is_window_stream(st):
            column = _window_column(st)
            return (column, "0 seconds") if column else None
        seen = set(_seen or ()) | {(database, name)}
        inputs = [r for r in direct_references(st) if r not in seen and self.kind(*r) == "stream"]
        if not inputs:
            return None
        times = [self.event_time(*r, _seen=seen) for r in inputs]
        if any(t is None for t in times) or len({t[0] for t in times}) != 1:
            return None
        column = times[0][0]
        if column not in {c["name"].lower() for c in st.columns}:
            return None
        return times[0]


def direct_references(stream: StreamInfo) -> list[tuple[str, str]]:
    """The objects a derived stream's SELECT names in FROM/JOIN (CTE names excluded),
    as ``(database, name)``, unqualified names in the derived stream's database; ``[]``
    for a source stream or a query that no longer parses."""
    if not stream.is_derived:
        return []
    statements = _parsed(stream)
    refs: list[tuple[str, str]] = []
    for s in statements:
        ctes = {c.alias_or_name.lower() for c in s.find_all(exp.CTE)}
        for t in s.find_all(exp.Table):
            name = t.name.lower()
            if not name or (not t.db and name in ctes):
                continue
            ref = ((t.db or stream.database).lower(), name)
            if ref not in refs:
                refs.append(ref)
    return refs


def is_window_stream(stream: StreamInfo) -> bool:
    """True for a derived stream whose query has a STREAMWINDOW (a window stream: it
    appends one final row per window and group, see :mod:`.derived`)."""
    if not stream.is_derived:
        return False
    from .text import QueryText
    from .window import extract_windows

    try:
        return bool(extract_windows(QueryText(stream.query, None))[1])
    except ValidationError:
        return False


def _parsed(stream: StreamInfo) -> list:
    """A derived stream's query parsed (STREAMWINDOW blanked out); [] if it no longer parses."""
    from .text import QueryText, parse
    from .window import extract_windows

    qt = QueryText(stream.query, None)
    try:
        return parse(qt, extract_windows(qt)[0], "derived stream")
    except ValidationError:
        return []


def _window_column(stream: StreamInfo) -> str | None:
    """The output column of a window stream that selects the ``window`` struct, or None."""
    for s in _parsed(stream):
        for e in s.selects if isinstance(s, exp.Query) else []:
            node = e.this if isinstance(e, exp.Alias) else e
            if isinstance(node, exp.Column) and not node.table and node.name.lower() == "window":
                return e.alias_or_name.lower()
    return None
