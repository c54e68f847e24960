"""CREATE/DROP/SHOW of streams and tables."""

from __future__ import annotations

from typing import Sequence

from ..connectors import hive_forms
from ..connectors import spec as cspec
from ..connectors.sources import stream_source
from ..exceptions import ObjectInUseError, ValidationError
from ..grammar import statements as st
from ..home import validate_name
from ..planner import checks
from ..columntypes import check_type
from .result import Result


class ObjectStatements:
    """Stream and table statements of :class:`~streamjob.executor.Executor`."""

    @property
    def confined(self) -> bool:
        """True if this session's principal is confined to the admin's allowlists (an
        operator; DESIGN §9, streamjob/security/policy.py). The rules for everyone apply
        to every role."""
        from ..catalog.records import Role

        return self.role is not Role.ADMIN

    def _sealed(self, props: dict) -> dict:
        """``props`` as the catalog stores them: literal secrets sealed with the admin's
        key (streamjob/security/sealed.py); a dry run's scratch catalog keeps them as
        given (``check`` touches nothing, not even the key)."""
        if self.dry_run:
            return props
        from ..security.sealed import seal_properties

        return seal_properties(props, self.home.policy)

    def _names(self, name: st.QualifiedName, what: str) -> tuple[str, str]:
        db, obj = name.resolve(self.database)
        return validate_name(db, "database name"), validate_name(obj, f"{what} name")

    def _do_CreateStream(self, s: st.CreateStream) -> Result:
        db, name = self._names(s.name, "stream")
        if s.as_select is not None:
            return self._create_derived_stream(s, db, name)
        if not s.columns:
            raise ValidationError(f"stream {db}.{name} declares no columns")
        row_format = _row_format(s.row_format, s)
        props = _stored_stream(s, f"{db}.{name}", db, self.home.table_location)
        checks.check_declared(self.home.policy, props, self.confined)
        try:
            spec = cspec.source_spec(name, props, row_format)
            checks.check_source(self.home.policy, f"{db}.{name}", spec, props, self.confined)
        except ValidationError as exc:
            if getattr(exc, "key", None) == "path" and s.location is not None:
                pos = s.where("location")
                exc.locate(pos.line, pos.column)
            raise
        columns = _columns(s.columns, s)
        _check_event_time(s, columns)
        _check_fixed_columns(s, stream_source(spec), columns)
        created = self.catalog.create_stream(
            db, name, columns, self._sealed(props), row_format,
            if_not_exists=s.if_not_exists)
        return Result(f"stream {db}.{name} {'created' if created else 'exists'}")

    def _create_derived_stream(self, s: st.CreateStream, db: str, name: str) -> Result:
        from ..planner.derived import derive_stream

        if s.if_not_exists and self.catalog.get_stream(db, name) is not None:
            return Result(f"stream {db}.{name} exists")
        derived = derive_stream(self.catalog, db, name, s.as_select, s.as_select_position)
        created = self.catalog.create_stream(db, name, derived.columns, {}, None,
                                             query=s.as_select, if_not_exists=s.if_not_exists)
        return Result(f"stream {db}.{name} {'created' if created else 'exists'} "
                      f"(derived from {', '.join(f'{d}.{n}' for d, n in sorted(derived.references))})")

    def _do_CreateTable(self, s: st.CreateTable) -> Result:
        db, name = self._names(s.name, "table")
        if not s.columns:
            raise ValidationError(f"table {db}.{name} declares no columns")
        props = st.props(s.properties)
        partitioned_by = tuple(c.lower() for c in s.partitioned_by)
        row_format = _row_format(s.row_format, s)
        stored_as = s.stored_as
        checks.check_declared(self.home.policy, props, self.confined)
        try:
            spec = cspec.table_spec(name, props, stored_as, s.location,
                                    self.home.table_location(db, name),
                                    partitioned_by=partitioned_by, row_format=row_format,
                                    stored_by=s.stored_by, database=db)
        except ValidationError as exc:
            if exc.text in ("STORED",) or (stored_as and exc.text == stored_as):
                pos = s.where("stored_as")
                exc.locate(pos.line, pos.column)
            elif getattr(exc, "key", None) == "location" and s.location is not None:
                pos = s.where("location")
                exc.locate(pos.line, pos.column)
            raise
        if spec.on_files and stored_as is None and "format" not in \
                {k.lower() for k in props} and hive_forms.row_format_default(row_format) == "delimited":
            # Hive: a table with a delimited ROW FORMAT and no STORED AS is a text table
            stored_as = "textfile"
            spec = cspec.table_spec(name, props, stored_as, s.location,
                                    self.home.table_location(db, name),
                                    partitioned_by=partitioned_by, row_format=row_format,
                                    database=db)
        columns = _columns(s.columns, s)
        if spec.on_files and "\x00" in spec.location:
            pos = s.where("location")
            raise ValidationError(f"table {db}.{name}: LOCATION holds a NUL character, which no "
                                  "file system accepts", pos.line, pos.column)
        if spec.on_files and self.home.inside_checkpoints(spec.location):
            pos = s.where("location")
            raise ValidationError(
                f"table {db}.{name}: LOCATION {spec.location} overlaps the checkpoint root "
                f"{self.home.checkpoint_root}, whose job directories DROP STREAMJOB deletes; "
                "put the table elsewhere", pos.line, pos.column)
        try:
            checks.check_table(self.home.policy, f"{db}.{name}", spec, props, self.confined)
        except ValidationError as exc:
            if getattr(exc, "key", None) == "location" and s.location is not None:
                pos = s.where("location")
                exc.locate(pos.line, pos.column)
            raise
        _check_partitions(s, f"{db}.{name}", spec, columns, partitioned_by)
        spec.check_columns(columns, f"{db}.{name}")  # err.key: the property
        created = self.catalog.create_table(
            db, name, columns, self._sealed(props), row_format,
            stored_as=stored_as, location=s.location, if_not_exists=s.if_not_exists,
            partitioned_by=partitioned_by)
        return Result(f"table {db}.{name} {'created' if created else 'exists'}")

    def _do_DropStream(self, s: st.DropStream) -> Result:
        db, name = self._names(s.name, "stream")
        readers = self._derived_readers(db, name)
        if readers:
            raise ObjectInUseError(
                f"cannot drop stream {db}.{name}: derived stream {readers[0]} reads it; "
                f"drop {readers[0]} first")
        dropped = self.catalog.drop_stream(db, name, if_exists=s.if_exists)
        return Result(f"stream {db}.{name} {'dropped' if dropped else 'does not exist'}")

    def _derived_readers(self, db: str, name: str) -> list[str]:
        """Derived streams whose query reads ``db.name`` (directly or through others)."""
        from ..planner.derived import stream_references

        out = []
        for other in self.catalog.list_streams():
            if other.is_derived and (db, name) in stream_references(self.catalog, other):
                out.append(other.qualified_name)
        return out

    def _do_DropTable(self, s: st.DropTable) -> Result:
        db, name = self._names(s.name, "table")
        dropped = self.catalog.drop_table(db, name, if_exists=s.if_exists)
        return Result(f"table {db}.{name} {'dropped' if dropped else 'does not exist'}")

    def _do_ShowStreams(self, s: st.ShowStreams) -> Result:
        rows = [(x.database, x.name, source_kind(x)) for x in self.catalog.list_streams()]
        return Result(columns=("database", "stream", "source"), rows=rows, title="streams")

    def _do_ShowTables(self, s: st.ShowTables) -> Result:
        rows = [(x.database, x.name, sink_kind(x), ", ".join(x.partitioned_by) or None)
                for x in self.catalog.list_tables()]
        return Result(columns=("database", "table", "connector", "partitioned by"), rows=rows,
                      title="tables")


def _columns(cols: Sequence[st.Column], stmt: st.Statement) -> list[dict[str, str]]:
    out = []
    for c in cols:
        try:
            # the declared spelling is kept (`dateTime`): JSON keys and Spark schemas
            # match it; names compare case-insensitively everywhere else (issue 13 point 1)
            out.append({"name": c.name, "type": check_type(c.type)})
        except ValidationError as exc:
            pos = stmt.where(f"column:{c.name.lower()}")
            exc.locate(pos.line, pos.column)
            raise
    return out


def _check_partitions(s: st.CreateTable, qname: str, spec, columns: list[dict[str, str]],
                      partitioned_by: tuple[str, ...]) -> None:
    """PARTITIONED BY is for file, Delta and Iceberg tables only, and partition columns must have a simple
    type (Spark writes each value into a ``col=value`` directory name). The parser has
    already checked that each names exactly one column."""
    if not partitioned_by:
        return
    if not spec.on_files:
        pos = s.where("partitioned_by")
        raise ValidationError(
            f"only file, Delta and Iceberg tables can be partitioned: {qname} is {spec.label} "
            "table; drop PARTITIONED BY or make it a file table "
            "(STORED AS PARQUET|ORC|JSON|CSV|TEXTFILE|DELTA|ICEBERG)",
            pos.line, pos.column,
            "PARTITIONED")
    types = {c["name"].lower(): c["type"] for c in columns}
    for name in partitioned_by:
        if types[name].startswith(("array<", "map<", "struct<")) or types[name] in ("binary", "variant"):
            pos = s.where(f"partition:{name}")
            raise ValidationError(
                f"partition column '{name}' has type {types[name]}; a partition column needs a "
                f"simple type (string, a number, date, timestamp, boolean)", pos.line, pos.column, name)


def _check_event_time(s: st.CreateStream, columns: list[dict[str, str]]) -> None:
    """``"watermark.column"`` must name a declared timestamp column."""
    col = st.props(s.properties).get("watermark.column")
    if col is None:
        return
    types = {c["name"].lower(): c["type"] for c in columns}
    if col.strip().lower() not in types:
        err = ValidationError(f"\"watermark.column\" names '{col}', which is not a column of "
                              f"stream {s.name} ({', '.join(types)})",
                              key="watermark.column", bad_value=True)
        raise err
    if types[col.strip().lower()] not in ("timestamp", "timestamp_ntz"):
        err = ValidationError(f"the event-time column '{col}' must be a timestamp, "
                              f"not {types[col.strip().lower()]}",
                              key="watermark.column", bad_value=True)
        raise err


def _check_fixed_columns(s: st.CreateStream, source, columns: list[dict[str, str]]) -> None:
    """A stream whose source has fixed columns (its
    :attr:`~streamjob.connectors.sources.StreamSource.fixed_columns`, e.g. Spark's rate
    source: timestamp, value) declares only those."""
    allowed = source.fixed_columns
    if allowed is None:
        return
    for c in columns:
        if c["name"].lower() not in allowed:
            pos = s.where(f"column:{c['name'].lower()}")
            raise ValidationError(
                f"a {source.identifier} stream has only the columns "
                f"{' and '.join(sorted(allowed))}, not '{c['name']}'",
                pos.line, pos.column, c["name"])


def _row_format(rf: st.RowFormat | None, stmt: st.Statement) -> dict | None:
    """The catalog's dict of a ROW FORMAT clause (:func:`.hive_forms.row_format_record`);
    an unknown SerDe class is reported where the class is written."""
    if rf is None:
        return None
    try:
        return hive_forms.row_format_record(rf.fields_terminated_by, rf.lines_terminated_by,
                                            rf.serde, dict(rf.serde_properties))
    except ValidationError as exc:
        if getattr(exc, "key", None) == "serde":
            pos = stmt.where("serde")
            exc.locate(pos.line, pos.column)
        raise


def source_kind(stream) -> str:
    """``kafka``, ``files``, ``rate`` or ``derived``."""
    if stream.is_derived:
        return "derived"
    return cspec.stream_source_name(stream.properties)


def sink_kind(table) -> str:
    """``sql``, ``console``, ``kafka``, ``delta``, ``iceberg`` or ``files (<format>)`` (the rule of
    :func:`~streamjob.connectors.spec.table_spec`: a table with ``"topic"`` is Kafka)."""
    p = {k.lower(): v for k, v in table.properties.items()}
    connector = cspec.table_connector(p)
    scope = cspec.table_scope(p, table.stored_as)
    if scope in ("delta table", "iceberg table"):
        return scope.split()[0]
    if scope == "file table":
        return f"files ({(table.stored_as or p.get('format') or 'parquet').lower()})"
    return connector


def _at(s, key: str) -> tuple[int, int]:
    pos = s.where(key)
    return pos.line, pos.column


def _stored_stream(s: st.CreateStream, what: str, db: str = "",
                   table_location=None) -> dict:
    """The TBLPROPERTIES a stream is stored with: ``STORED AS DELTA LOCATION 'dir'``
    becomes ``"source"="delta"``, ``"path"="dir"`` (a Delta stream, as
    :func:`streamjob.connectors.spec.source_spec` reads it; SHOW CREATE shows that
    form); ``STORED AS ICEBERG [LOCATION 'warehouse']`` becomes ``"source"="iceberg"``,
    ``"path"`` the table's directory (``<warehouse>/<namespace>.db/<table>``, without
    LOCATION ``table_location(db, table)``: the home's warehouse), ``"iceberg.namespace"``
    (default ``db``) and ``"iceberg.table"`` (default the stream's name), so the stream
    names its table wherever it is read.

    Raises:
        ValidationError: STORED AS other than DELTA; LOCATION without it; with
            ``"source"`` or ``"path"`` given too.
    """
    props = st.props(s.properties)
    if s.stored_as is None:
        if s.location is not None:
            raise ValidationError(f"stream {what}: LOCATION goes with STORED AS DELTA (a Delta "
                                  "table read as a stream)", *_at(s, "location"))
        return props
    if s.stored_as == "iceberg":
        return _iceberg_stream(s, what, db, props, table_location)
    if s.stored_as != "delta":
        raise ValidationError(f"stream {what}: a stream is STORED AS DELTA or ICEBERG only (a "
                              f"lakehouse table read as a stream), not {s.stored_as.upper()}; a file stream is "
                              "TBLPROPERTIES(\"source\"=\"files\", \"path\"=...)",
                              *_at(s, "stored_as"))
    given = [k for k in props if k.lower() in ("source", "path")]
    if given:
        raise ValidationError(f"stream {what}: STORED AS DELTA LOCATION says what the stream "
                              f"reads; drop \"{given[0]}\"", key=given[0].lower(), bad_value=True)
    if s.location is None:
        raise ValidationError(f"stream {what}: STORED AS DELTA needs LOCATION '<the Delta "
                              "table's directory>'", *_at(s, "stored_as"))
    return {**props, "source": "delta", "path": s.location}


def _iceberg_stream(s: st.CreateStream, what: str, db: str, props: dict,
                    table_location) -> dict:
    """:func:`_stored_stream` of ``STORED AS ICEBERG``.

    Raises:
        ValidationError: ``"source"`` or ``"path"`` given too.
    """
    given = [k for k in props if k.lower() in ("source", "path")]
    if given:
        raise ValidationError(f"stream {what}: STORED AS ICEBERG says what the stream "
                              f"reads; drop \"{given[0]}\"", key=given[0].lower(), bad_value=True)
    low = {k.lower(): v for k, v in props.items()}
    namespace = (low.get("iceberg.namespace") or db).strip()
    table = (low.get("iceberg.table") or what.rsplit(".", 1)[-1]).strip()
    if s.location is not None:
        path = s.location.rstrip("/") + f"/{namespace}.db/{table}"
    else:
        path = table_location(db, table) if table_location else ""
    return {**props, "source": "iceberg", "path": path, "iceberg.namespace": namespace,
            "iceberg.table": table}
