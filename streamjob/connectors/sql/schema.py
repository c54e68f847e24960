"""The schema check of the SQL sink: does an existing table fit its declaration?

:class:`SchemaCheck` (a base of :class:`~streamjob.connectors.sql.sink.SqlSink`) holds
:meth:`~SchemaCheck.check`, which raises :class:`~streamjob.exceptions.SchemaMismatch`
naming every mismatching column. Types are compared by family (:func:`type_family` of
the declared StreamSQL type, :func:`_column_family` of the reflected column type), not
by length, precision or width.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.exc import SQLAlchemyError

from streamjob.exceptions import SchemaMismatch
from streamjob.connectors.sql.engine import _DECIMAL, _mask, _norm


# -- type families (the schema check) ------------------------------------------------

_DECLARED_FAMILY = {
    "tinyint": "integer", "byte": "integer", "smallint": "integer", "short": "integer",
    "int": "integer", "integer": "integer", "bigint": "integer", "long": "integer",
    "float": "floating", "real": "floating", "double": "floating",
    "boolean": "boolean", "bool": "boolean", "string": "string", "date": "date",
    "timestamp": "timestamp", "timestamp_ntz": "timestamp", "binary": "binary",
}


def type_family(type_text: str) -> str:
    """The family of a declared StreamSQL type: ``integer``, ``floating``, ``decimal``,
    ``string``, ``boolean``, ``date``, ``timestamp`` or ``binary`` (complex types and
    unknown names are ``string``: they are stored as text)."""
    t = _norm(type_text)
    if t in _DECLARED_FAMILY:
        return _DECLARED_FAMILY[t]
    if _DECIMAL.match(t):
        return "decimal"
    return "string"


def _column_family(col_type: sa.types.TypeEngine) -> str | None:
    """The family of a reflected column type; None when the database did not say
    (an untyped SQLite column, which stores anything); ``other`` for types outside
    the families (JSON, UUID, interval, time, ...)."""
    if isinstance(col_type, sa.types.NullType):
        return None
    for cls, family in ((sa.Boolean, "boolean"), (sa.Integer, "integer"),
                        (sa.Float, "floating"), (sa.Numeric, "decimal"),
                        (sa.DateTime, "timestamp"), (sa.Date, "date"),
                        (sa.Enum, "other"), (sa.String, "string"),
                        (sa.LargeBinary, "binary")):
        if isinstance(col_type, cls):
            return family
    return "other"


def _compatible(declared: str, actual: str | None) -> bool:
    """Same family, or an integer declared into a decimal (NUMERIC) column; a column of
    unknown type (untyped SQLite) takes anything."""
    return actual is None or actual == declared or (declared == "integer" and actual == "decimal")


def _type_text(col_type: sa.types.TypeEngine, dialect) -> str:
    try:
        return col_type.compile(dialect=dialect)
    except Exception:  # noqa: BLE001 - some reflected types cannot compile; show repr
        return repr(col_type)


class SchemaCheck:
    """The schema check of :class:`~streamjob.connectors.sql.sink.SqlSink` (a base
    class of it: uses its ``spec``, ``columns``, ``upsert``, ``engine`` and
    ``_unreachable``)."""

    def check(self) -> None:
        """Check that the table, if it exists, fits the declaration; create nothing.

        A missing table is fine (:meth:`prepare` creates it). An existing one must have

        * every declared column (names compared case-insensitively);
        * for each, a type of the same family as the declared StreamSQL type
          (:func:`type_family`: integer, floating, decimal, string, boolean, date,
          timestamp, binary), except that an integer declared into a NUMERIC/DECIMAL
          column is fine (exact); lengths, precisions and widths are not compared;
          a column of unknown type (an untyped SQLite column) takes anything;
        * no undeclared column that is NOT NULL without a default (identity, generated
          and SQLite rowid columns fill themselves), since the sink never writes it;
        * for an upsert sink, a primary key or a unique constraint/index (not partial)
          on exactly the ``primary.key`` columns, as ``ON CONFLICT`` requires.

        Raises:
            SchemaMismatch: the table does not fit; the message names the masked URL,
                the table, every mismatching column (declared vs actual type) and what
                to do; ``.columns`` lists the column names.
            ConnectorError: the database cannot be reached (names the masked URL).
        """
        problems: list[tuple[str, str]] = []
        declared = {c["name"].lower(): c for c in self.columns}
        if self.upsert:
            for k in self.spec.primary_key:
                if k.lower() not in declared:
                    problems.append((k, f"primary.key column '{k}' is not a declared column"))
        try:
            with self.engine.connect() as conn:
                insp = sa.inspect(conn)
                if insp.has_table(self.spec.table):
                    problems += self._table_problems(insp, conn.dialect, declared)
        except SQLAlchemyError as exc:
            raise self._unreachable("check", exc) from None
        if problems:
            raise SchemaMismatch(
                f"SQL table '{self.spec.table}' at {_mask(self.spec.url)} does not match its "
                f"declaration: {'; '.join(p for _, p in problems)}. Alter the table to match "
                "(or drop it and let the job create it from the declaration), or change the "
                "table's declared columns or \"primary.key\"; then start the job again",
                columns=tuple(dict.fromkeys(c for c, _ in problems)))

    def _table_problems(self, insp, dialect, declared: dict[str, dict]) -> list[tuple[str, str]]:
        problems: list[tuple[str, str]] = []
        table = self.spec.table
        actual = {c["name"].lower(): c for c in insp.get_columns(table)}
        for name, col in declared.items():
            have = actual.get(name)
            if have is None:
                problems.append((col["name"], f"column '{col['name']}' is missing "
                                              f"(declared {col['type']})"))
                continue
            want = type_family(col["type"])
            got = _column_family(have["type"])
            if not _compatible(want, got):
                problems.append((col["name"], (
                    f"column '{col['name']}' is declared {col['type']} ({want}) but the table has "
                    f"{_type_text(have['type'], dialect)} ({got})")))
        pk = insp.get_pk_constraint(table) or {}
        pk_cols = [c.lower() for c in pk.get("constrained_columns") or []]
        for name, have in actual.items():
            if name in declared or have.get("nullable", True):
                continue
            if have.get("default") is not None or have.get("identity") or have.get("computed"):
                continue
            if (dialect.name == "sqlite" and pk_cols == [name]
                    and _type_text(have["type"], dialect).upper() == "INTEGER"):
                continue  # the rowid alias: SQLite fills it
            problems.append((have["name"], (
                f"column '{have['name']}' ({_type_text(have['type'], dialect)} NOT NULL, no "
                "default) is not declared, so the sink cannot fill it")))
        if self.upsert:
            want_key = {k.lower() for k in self.spec.primary_key}
            keys = [pk_cols] if pk_cols else []
            keys += [[c.lower() for c in u["column_names"]]
                     for u in insp.get_unique_constraints(table)]
            for ix in insp.get_indexes(table):
                opts = ix.get("dialect_options") or {}
                if (ix.get("unique") and None not in ix["column_names"]
                        and not opts.get("postgresql_where") and not opts.get("sqlite_where")):
                    keys.append([c.lower() for c in ix["column_names"]])
            if not any(set(k) == want_key for k in keys):
                shown = ", ".join(self.spec.primary_key)
                found = "; ".join("(" + ", ".join(k) + ")" for k in keys) or "none"
                problems.append((shown, (
                    f"primary.key ({shown}) has no primary key or unique index on exactly "
                    f"those columns (the table has: {found}); an upsert's ON CONFLICT needs "
                    f"one, e.g. CREATE UNIQUE INDEX ON {table} ({shown})")))
        return problems


def add_nullable_columns(spec, columns: list[dict]) -> list[str]:
    """Add ``columns`` (``{"name", "type"}``, StreamSQL types) to the SQL table of ``spec``
    (a :class:`~streamjob.connectors.spec.SqlTableSpec`) as nullable columns without a
    default, if the table exists and lacks them (a missing table is created from its
    declaration when a job first writes it). The SQL sink's rule for a query upgrade
    (docs/upgrades.md): an existing row reads NULL in the new column, as with SQL's
    ``ALTER TABLE ... ADD COLUMN``. Returns the names added.

    Raises:
        ConnectorError: the database cannot be reached or refuses the change (names the
            masked URL and the table).
    """
    from streamjob.connectors.sql.engine import engine_for, sql_type
    from streamjob.exceptions import ConnectorError

    added = []
    try:
        engine = engine_for(spec.url)
        with engine.begin() as conn:
            insp = sa.inspect(conn)
            if not insp.has_table(spec.table):
                return []
            have = {c["name"].lower() for c in insp.get_columns(spec.table)}
            prep = conn.dialect.identifier_preparer
            for col in columns:
                if col["name"].lower() in have:
                    continue
                kind = sql_type(col["type"]).compile(dialect=conn.dialect)
                conn.execute(sa.text(f"ALTER TABLE {prep.quote(spec.table)} ADD COLUMN "
                                     f"{prep.quote(col['name'])} {kind} NULL"))
                added.append(col["name"])
    except SQLAlchemyError as exc:
        raise ConnectorError(f"SQL table '{spec.table}' at {_mask(spec.url)}: cannot add "
                             f"column(s) {', '.join(c['name'] for c in columns)}: "
                             f"{str(exc).splitlines()[0]}") from None
    return added
