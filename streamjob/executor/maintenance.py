"""Lakehouse table maintenance (issue 32; docs/connectors.md "Delta Lake", "Maintenance"):
``OPTIMIZE [TABLE] t [ZORDER BY (c, ...)]`` and ``VACUUM [TABLE] t [RETAIN n HOURS]
[DRY RUN]``, Delta Lake's own statements, on tables ``STORED AS DELTA`` or ``ICEBERG``;
the work is :mod:`streamjob.connectors.delta.maintenance` (delta-rs), for an Iceberg
table :mod:`.maintenance_iceberg`.

Roles (DESIGN §9, docs/security.md): both change a table's files, so they are an
operator's or the admin's (a viewer and the anonymous caller of ``--no-auth`` are
refused), and the table's LOCATION must pass the admin's rules for the principal, as
it does when a job writes it.

Safety of VACUUM: a job reading the table as a Delta stream (running, or stopped and
able to resume from its checkpoint) reads the files of its checkpointed version and
of every later one. VACUUM is refused, naming those jobs, when its retention is
shorter than Delta's default (168 hours) while such a job exists, or when it would
delete a file of a version at or after the oldest Delta position in any such job's
retained checkpoints (the offsets ``delta:<path>``, :mod:`.source`). OPTIMIZE's commit
has ``dataChange`` false, which the Delta stream source skips, so it is never refused
for readers.
"""

from __future__ import annotations

import os

from .. import shapes
from ..connectors import spec as cspec
from ..connectors.delta import maintenance as dm
from ..connectors.delta.options import OFFSETS_PREFIX, offsets_key
from ..exceptions import (AccessDeniedError, ObjectInUseError, ObjectNotFoundError,
                          ValidationError)
from ..grammar import statements as st
from ..planner import checks
from .maintenance_iceberg import IcebergMaintenance
from .result import Result
from streamjob.catalog.records import Role


def _same_path(a: str, b: str) -> bool:
    return os.path.abspath(a) == os.path.abspath(b) or \
        os.path.realpath(a) == os.path.realpath(b)


class MaintenanceStatements(IcebergMaintenance):
    """OPTIMIZE and VACUUM of :class:`~streamjob.executor.Executor` (module docstring)."""

    def _delta_table(self, s: st.Statement, what: str):
        """``(table record, DeltaTableSpec)`` of the statement's table, after the role
        and the admin's path rules.

        Raises:
            AccessDeniedError: a viewer, or the anonymous caller.
            ObjectNotFoundError: no such table.
            ValidationError: not a Delta or Iceberg table (at the name).
            PolicyError: the LOCATION is outside what the principal may reach.
        """
        if getattr(self, "role", Role.ADMIN) is Role.VIEWER:
            raise AccessDeniedError(f"{what} changes a table's files: a viewer may not run it "
                                    "(it needs an operator or the admin)")
        if getattr(self, "principal", None) == "anonymous":
            raise AccessDeniedError(f"{what} changes a table's files: it needs an operator's "
                                    "or the admin's token, not an anonymous caller")
        db, name = self._names(s.name, "table")
        info = self.catalog.get_table(db, name)
        if info is None:
            hint = (f" ({db}.{name} is a stream; {what} maintains Delta and Iceberg tables)"
                    if self.catalog.get_stream(db, name) is not None else "")
            raise ObjectNotFoundError(f"table {db}.{name} does not exist{hint}")
        spec = cspec.table_spec(info.name, info.properties, info.stored_as, info.location,
                                self.home.table_location(db, name), info.partitioned_by,
                                info.row_format, database=db)
        if cspec.delta_table_location(spec) is None and cspec.iceberg_table_ref(spec) is None:
            from .objects import sink_kind

            raise ValidationError(f"table {db}.{name} is a {sink_kind(info)} table: {what} "
                                  "maintains Delta and Iceberg tables (STORED AS DELTA or "
                                  "ICEBERG) only")
        checks.check_maintained(self.home.policy, f"{db}.{name}", spec, self.confined)
        return info, spec

    def _do_OptimizeTable(self, s: st.OptimizeTable) -> Result:
        info, spec = self._delta_table(s, "OPTIMIZE")
        ref = cspec.iceberg_table_ref(spec)
        if ref is not None:
            return self._optimize_iceberg(info, ref, s)
        columns = {c["name"].lower() for c in info.columns}
        for col in s.zorder_by:
            pos = s.where(f"column:{col}")
            if col not in columns:
                from ..nearest import nearest

                near = nearest(col, sorted(columns))
                raise ValidationError(f"table {info.qualified_name} has no column '{col}'"
                                      + (f" (did you mean '{near}'?)" if near else ""),
                                      pos.line, pos.column, col)
            if col in spec.partitioned_by:
                raise ValidationError(f"'{col}' is a partition column of "
                                      f"{info.qualified_name}: ZORDER BY orders the files "
                                      "within a partition, so it takes other columns "
                                      "(Delta's rule)", pos.line, pos.column, col)
        if self.dry_run:
            return Result(f"table {info.qualified_name} can be optimized")
        done = dm.optimize(spec.path, s.zorder_by, spec.storage_options())
        data = shapes.optimize_json(info.qualified_name, spec.location, s.zorder_by, done)
        row = (info.qualified_name, done.version, done.files_added, done.files_removed,
               done.bytes_added, done.bytes_removed, done.partitions_optimized)
        how = f"z-ordered by {', '.join(s.zorder_by)}" if s.zorder_by else "compacted"
        message = (f"table {info.qualified_name} {how}: {done.files_removed} files "
                   f"({done.bytes_removed} bytes) rewritten into {done.files_added} "
                   f"({done.bytes_added} bytes), version {done.version}"
                   if done.version is not None else
                   f"table {info.qualified_name}: nothing to optimize")
        return Result(message, columns=("table", "version", "files added", "files removed",
                                        "bytes added", "bytes removed",
                                        "partitions optimized"),
                      rows=[row], title="optimize", object=info.qualified_name, data=data)

    def _do_VacuumTable(self, s: st.VacuumTable) -> Result:
        info, spec = self._delta_table(s, "VACUUM")
        ref = cspec.iceberg_table_ref(spec)
        if ref is not None:
            return self._vacuum_iceberg(info, ref, s)
        hours = dm.DEFAULT_RETENTION_HOURS if s.retain_hours is None else s.retain_hours
        readers = self._delta_readers(spec.path)
        if readers and hours < dm.DEFAULT_RETENTION_HOURS:
            pos = s.where("retain")
            raise ObjectInUseError(
                f"VACUUM of {info.qualified_name} RETAIN {hours} HOURS is refused: "
                f"{_jobs(readers)} read{'s' if len(readers) == 1 else ''} it as a Delta "
                f"stream, so its removed files are kept at least {dm.DEFAULT_RETENTION_HOURS}"
                " hours (Delta's default retention); drop the jobs, or retain longer"
                ).locate(pos.line, pos.column)
        if self.dry_run:
            return Result(f"table {info.qualified_name} can be vacuumed")
        enforce = hours >= dm.DEFAULT_RETENTION_HOURS
        would = dm.vacuum(spec.path, hours, dry_run=True, enforce=enforce,
                          storage_options=spec.storage_options())
        self._keep_read_files(info, spec, readers, would, s)
        done = would if s.dry_run else dm.vacuum(spec.path, hours, dry_run=False,
                                                 enforce=enforce,
                                                 storage_options=spec.storage_options())
        verb = "would delete" if s.dry_run else "deleted"
        message = (f"VACUUM of {info.qualified_name} (RETAIN {hours} HOURS) {verb} "
                   f"{len(done.files)} files ({done.bytes} bytes)")
        return Result(message, columns=("file", "bytes"), rows=list(done.files),
                      title=f"files {'to delete' if s.dry_run else 'deleted'}",
                      object=info.qualified_name,
                      data=shapes.vacuum_json(info.qualified_name, spec.location, hours, done))

    # -- who reads the table as a Delta stream

    def _delta_readers(self, path: str) -> dict[str, list]:
        """``{job qualified name: [its retained checkpoints' Delta positions of the
        table at path]}`` of every job in the catalog reading it as a Delta stream (a
        source dependency on a Delta stream at ``path``, directly or through derived
        streams, or a ``delta:<path>`` key in its
        checkpoints' offsets). A job of any status counts: a stopped or failed one
        resumes from its checkpoint."""
        key = offsets_key(path)
        out: dict[str, list] = {}
        for job in self.catalog.list_jobs():
            reads = any(_same_path(read, path)
                        for read in self._stream_refs(job, cspec.delta_stream_path))
            positions = []
            for cp in self.catalog.list_checkpoints(job.uid):
                for k, at in dict(cp.source_offsets or {}).items():
                    if (str(k).startswith(OFFSETS_PREFIX) and isinstance(at, dict)
                            and _same_path(str(k)[len(OFFSETS_PREFIX):], key[len(OFFSETS_PREFIX):])):
                        positions.append(at)
            if reads or positions:
                out[job.qualified_name] = positions
        return out

    def _stream_refs(self, job, ref_of) -> list:
        """``ref_of(spec)`` of each source stream ``job`` reads (:meth:`_source_streams`)
        where it is not None: e.g. the Delta path or the Iceberg table it streams from. A
        stream whose spec no longer validates is left out."""
        refs = []
        for stream in self._source_streams(job):
            try:
                sp = cspec.source_spec(stream.name, stream.properties, stream.row_format)
            except ValidationError:
                continue
            ref = ref_of(sp)
            if ref is not None:
                refs.append(ref)
        return refs

    def _source_streams(self, job) -> list:
        """The source streams ``job`` reads, through its derived streams too."""
        from ..planner.derived import stream_references

        out = []
        for kind, db, name, role in job.dependencies:
            if kind != "stream" or role != "source":
                continue
            stream = self.catalog.get_stream(db, name)
            if stream is None:
                continue
            if not stream.is_derived:
                out.append(stream)
                continue
            for d, n in stream_references(self.catalog, stream):
                base = self.catalog.get_stream(d, n)
                if base is not None and not base.is_derived:
                    out.append(base)
        return out

    def _keep_read_files(self, info, spec, readers: dict[str, list], would, s) -> None:
        """Refuse (naming the jobs) a VACUUM that would delete a file a reader's oldest
        retained position still reads (:func:`.delta.maintenance.needed_files`)."""
        positions = [(int(p.get("version", 0)), int(p.get("snapshot", 0)), job)
                     for job, found in readers.items() for p in found]
        if not positions or not would.files:
            return
        oldest = min(v for v, _snap, _job in positions)
        snapshot = any(snap for v, snap, _job in positions if v == oldest)
        needed = dm.needed_files(spec.path, oldest, bool(snapshot))
        hit = [f for f, _size in would.files if f in needed]
        if hit:
            jobs = sorted({job for _v, _snap, job in positions})
            raise ObjectInUseError(
                f"VACUUM of {info.qualified_name} is refused: it would delete {len(hit)} "
                f"files (e.g. {hit[0]}) of version {oldest} or later, which {_jobs(jobs)} "
                "still read as a Delta stream from their checkpoints; retain longer, or "
                "let the jobs move past that version (or drop them)")


def _jobs(names) -> str:
    names = sorted(names)
    return ("streamjob " if len(names) == 1 else "streamjobs ") + ", ".join(names)
