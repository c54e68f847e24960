"""SHOW CREATE STREAM|TABLE|STREAMJOB and CREATE / USE / SHOW / DROP DATABASE (issue 16).

The current database (``USE db``) belongs to the client session
(:class:`~streamjob.client.session.ClientSession`): the executor resolves unqualified names in
``self.database``, and USE answers with :attr:`Result.database`, which the session keeps
for its next statements (the rest of the script, the shell, the HTTP request).
"""

from __future__ import annotations


from ..exceptions import ObjectNotFoundError
from . import ddl
from ..grammar import statements as st
from ..home import validate_name
from .result import Result
from ..nearest import nearest


def did_you_mean(name: str, names: list[str]) -> str:
    """``" (did you mean x?)"`` for the nearest of ``names`` (:func:`streamjob.nearest.nearest`),
    or ``""``: the hint of an unknown database, stream, table, job or function."""
    close = nearest(name, names)
    return f" (did you mean {close}?)" if close else ""


class DatabaseStatements:
    """SHOW CREATE and database statements of :class:`~streamjob.executor.Executor`."""

    def _do_ShowCreate(self, s: st.ShowCreate) -> Result:
        db, name = self._names(s.name, s.kind)
        if s.kind == "stream":
            obj = self.catalog.get_stream(db, name)
            text = ddl.create_stream_text(obj) if obj is not None else None
        elif s.kind == "table":
            obj = self.catalog.get_table(db, name)
            text = ddl.create_table_text(obj) if obj is not None else None
        elif s.kind == "function":
            obj = self.catalog.get_function(db, name)
            text = ddl.create_function_text(obj) if obj is not None else None
        else:
            obj = self.catalog.get_job(db, name)
            text = ddl.create_job_text(obj) if obj is not None else None
        if text is None:
            known = [x.name for x in {"stream": self.catalog.list_streams,
                                      "table": self.catalog.list_tables,
                                      "streamjob": self.catalog.list_jobs,
                                      "function": self.catalog.list_functions}[s.kind](db)]
            raise ObjectNotFoundError(f"{s.kind} {db}.{name} does not exist{did_you_mean(name, known)}")
        return Result(columns=("statement",), rows=[(text,)], title=f"{s.kind} {db}.{name}",
                      object=f"{db}.{name}", text=text)

    def _do_CreateDatabase(self, s: st.CreateDatabase) -> Result:
        db = validate_name(s.database, "database name")
        created = self.catalog.create_database(db, if_not_exists=s.if_not_exists)
        return Result(f"database {db} {'created' if created else 'exists'}", object=db)

    def _do_UseDatabase(self, s: st.UseDatabase) -> Result:
        db = validate_name(s.database, "database name")
        if not self.catalog.database_exists(db):
            known = [row[0] for row in self.catalog.list_databases()]
            raise ObjectNotFoundError(f"database {db} does not exist{did_you_mean(db, known)}; "
                                      f"create it with CREATE DATABASE {ddl.quote_name(db)}")
        self.use_database(db)
        return Result(f"using database {db}", object=db, database=db)

    def _do_ShowDatabases(self, s: st.ShowDatabases) -> Result:
        rows = [(name, streams, tables, jobs, "yes" if name == self.database else None)
                for name, streams, tables, jobs in self.catalog.list_databases()]
        return Result(columns=("database", "streams", "tables", "streamjobs", "current"),
                      rows=rows, title="databases")

    def _do_DropDatabase(self, s: st.DropDatabase) -> Result:
        db = validate_name(s.database, "database name")
        if s.cascade:  # a derived stream elsewhere reading one of its streams stops it
            for stream in self.catalog.list_streams(db):
                readers = [r for r in self._derived_readers(db, stream.name)
                           if not r.startswith(f"{db}.")]
                if readers:
                    from ..exceptions import ObjectInUseError

                    raise ObjectInUseError(f"cannot drop database {db}: derived stream {readers[0]} "
                                           f"reads {db}.{stream.name}; drop {readers[0]} first")
        dropped = self.catalog.drop_database(db, if_exists=s.if_exists, cascade=s.cascade)
        if not dropped:
            return Result(f"database {db} does not exist", object=db)
        result = Result(f"database {db} dropped", object=db)
        if db == self.database:  # the session falls back to default, as Hive does
            self.use_database(st.DEFAULT_DATABASE)
            result.database = st.DEFAULT_DATABASE
            result.message += "; using database default"
        return result
