"""A bare ``SELECT ... FROM stream [LIMIT n]``, the preview of the shell and of ``-e``: a
transient streaming query whose rows are printed as they arrive (a SELECT of tables
alone that reads a lakehouse table at a version, ``FROM t VERSION AS OF n``, runs once
as a batch query and prints its first ``n`` rows). :class:`Previews` is the
one object both front ends run it through, over their client session.

The SELECT is planned by :mod:`streamjob.planner.preview` (the job planner's checks and
source readers) and runs in its own Spark session clone with a temporary checkpoint
directory and a 500 ms trigger; a foreachBatch function prints each micro-batch's rows
until ``n`` rows were shown (20 without LIMIT) or Ctrl-C, then the query is stopped and
its checkpoint directory removed. Ctrl-C stops the preview cleanly: one line
(``0 rows (stopped by Ctrl-C)``), the prompt again, the session ready for the next
statement (:func:`ctrl_c_sets`). Nothing is committed to any consumer group and nothing
is recorded in the catalog. Rows print as a table whose header comes first (or as one
JSON object per line under the shell's ``\\json`` or ``--json``).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import shutil
import signal
import tempfile
import threading
from decimal import Decimal
from typing import Any, Callable

import click

from ..exceptions import StreamJobError, ValidationError

#: Micro-batch interval of a preview query.
TRIGGER = "500 milliseconds"
#: Widest a column is padded to (longer values are printed whole).
MAX_WIDTH = 30


def format_value(value: Any) -> str:
    """A cell as printed: ``null``, timestamps as ``YYYY-MM-DD HH:MM:SS[.ffffff]``,
    nested values as JSON, anything else as ``str``."""
    if value is None:
        return "null"
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, (dict, list)):
        return json.dumps(value, default=str)
    if hasattr(value, "asDict"):  # a nested Row
        return json.dumps(value.asDict(recursive=True), default=str)
    if isinstance(value, Decimal):
        return str(value)
    return str(value)


class RowPrinter:
    """Prints rows under a header as they come, up to ``limit`` rows.

    Column widths are those of the names, widened by the first rows printed (up to
    :data:`MAX_WIDTH`), so later rows line up with the header. ``as_json`` prints one
    JSON object per row instead."""

    def __init__(self, columns: list[str], limit: int, as_json: bool,
                 echo: Callable[[str], None]) -> None:
        self.columns = list(columns)
        self.limit = limit
        self.as_json = as_json
        self.echo = echo
        self.count = 0
        self.widths: list[int] | None = None
        self._lock = threading.Lock()

    @property
    def remaining(self) -> int:
        """Rows still to print."""
        return max(0, self.limit - self.count)

    def print_rows(self, rows: list[tuple]) -> None:
        """Print ``rows`` (at most :attr:`remaining` of them)."""
        with self._lock:
            rows = rows[: self.remaining]
            if not rows:
                return
            if self.as_json:
                for row in rows:
                    self.echo(json.dumps(dict(zip(self.columns, row)), default=str))
            else:
                cells = [[format_value(v) for v in row] for row in rows]
                if self.widths is None:
                    self.widths = [min(MAX_WIDTH, max([len(c)] + [len(r[i]) for r in cells]))
                                   for i, c in enumerate(self.columns)]
                    self.echo(self._line(self.columns))
                    self.echo("-+-".join("-" * w for w in self.widths))
                for r in cells:
                    self.echo(self._line(r))
            self.count += len(rows)

    def _line(self, cells: list[str]) -> str:
        return " | ".join(c.ljust(w) for c, w in zip(cells, self.widths or [])).rstrip()

    def footer(self, interrupted: bool) -> str:
        """``3 rows``, with ``(stopped by Ctrl-C)`` when interrupted."""
        n = self.count
        return f"{n} row{'s' if n != 1 else ''}" + (" (stopped by Ctrl-C)" if interrupted else "")


class Previews:
    """The bare ``SELECT ... FROM stream [LIMIT n]`` previews of one client session: the
    one object every front end runs a preview through (the shell, ``-e`` of the command
    line; see the module docstring for what a preview is).

    Args:
        session: the client session (:class:`~streamjob.client.session.ClientSession`):
            its catalog and home, its SET values (``spark.sql.*`` settings, records per
            batch) and its current database (``USE``) are the preview's, read at each run.
        spark: ``() -> SparkSession`` of this process, called at the first preview that
            reaches Spark (a SELECT with an error, or ``LIMIT 0``, starts none); it
            leaves Ctrl-C to Python (the front end's
            :func:`~streamjob.shell.terminal.restore_sigint`), so Ctrl-C stops a preview.
        echo: prints one line of output (rows, the footer).
        interactive: a person reads the rows on a terminal: say first how many rows are
            awaited and that Ctrl-C stops.
        refusal: why this client runs no previews, if it runs none: a client of the HTTP
            API (``--server``) has no catalog here, and the server runs no previews; each
            front end says it in its own words. :meth:`run` then raises it, at line 1,
            column 1 of the SELECT, before anything is read or sent.

    :attr:`reset` is where each Kafka stream is read from (``earliest``, ``latest``,
    ``committed`` or a timestamp in ms; None: each stream's own reset strategy): the
    shell's ``SET transwarp.consumer.reset.offset.strategy``. :attr:`started` says whether
    a preview called ``spark``.
    """

    def __init__(self, session, spark: Callable[[], Any], *,
                 echo: Callable[..., None] = click.echo, interactive: bool = False,
                 refusal: str | None = None) -> None:
        self.session = session
        self.spark = spark
        self.echo = echo
        self.interactive = interactive
        self.refusal = refusal
        self.reset: str | None = None
        self.started = False

    def run(self, text: str, as_json: bool = False) -> None:
        """Run the bare SELECT ``text`` as a transient query and print its rows (one JSON
        object per row with ``as_json``); returns after ``n`` rows, Ctrl-C or a failure
        of the query. Errors are located in ``text``.

        Raises:
            ValidationError: this client runs no previews (``refusal``), or the SELECT
                does not resolve (see :func:`streamjob.planner.preview.plan_preview`).
            StreamJobError: the query failed (an unreachable broker, a bad record ...).
        """
        if self.refusal is not None:
            raise ValidationError(self.refusal, 1, 1)
        from .. import properties as jp
        from ..planner.preview import plan_preview

        session = self.session
        plan = plan_preview(session.catalog, session.home, text, session.properties,
                            self.reset, default_database=session.database)
        if plan.limit == 0:
            self.echo("0 rows")
            return
        from ..planner.bind import bind_preview
        from ..spark.session import job_session
        from ..spark.query import preview_frame

        spark = self.spark()
        self.started = True
        df = preview_frame(job_session(spark, jp.spark_settings(plan.props)), bind_preview(plan))
        printer = RowPrinter(df.columns, plan.limit, as_json, self.echo)
        if plan.batch:  # tables alone, one at a version (time travel): read once
            try:
                rows = [tuple(r) for r in df.limit(plan.limit).collect()]
            except Exception as exc:  # noqa: BLE001 - Spark's error, summarised
                from ..manager.summary import error_summary

                raise StreamJobError(f"the query failed: {error_summary(exc)}") from None
            printer.print_rows(rows)
            self.echo(printer.footer(False))
            return
        self._stream(df, plan, printer)

    def _stream(self, df, plan, printer: RowPrinter) -> None:
        """Run ``df`` as a streaming query until ``printer`` printed ``plan.limit`` rows,
        Ctrl-C or the query's failure; stop it and remove its checkpoint directory.

        Raises:
            StreamJobError: the query failed.
        """
        done = threading.Event()
        stopping = threading.Event()  # the query is being stopped: batches do nothing more
        interrupted = threading.Event()  # by Ctrl-C

        def batch(frame, batch_id: int) -> None:
            try:
                want = printer.remaining
                if want > 0 and not stopping.is_set():
                    rows = [tuple(r) for r in frame.limit(want).collect()]
                    if not stopping.is_set():
                        printer.print_rows(rows)
            except Exception:
                if not stopping.is_set():
                    raise
                return  # its Spark job cancelled by the stop (ctrl_c_sets)
            if printer.remaining <= 0:
                done.set()

        checkpoint = tempfile.mkdtemp(prefix="streamjob-select-")
        query = None
        failure = None
        try:
            with ctrl_c_sets(interrupted, stopping):
                query = (df.writeStream.outputMode(plan.output_mode)
                         .option("checkpointLocation", checkpoint)
                         .trigger(processingTime=TRIGGER)
                         .foreachBatch(batch).start())
                if self.interactive:
                    click.secho(f"(up to {plan.limit} rows as they arrive; Ctrl-C stops)",
                                dim=True)
                while not done.wait(0.25) and not interrupted.is_set():
                    if not query.isActive:
                        break
                stopping.set()
                if not done.is_set() and not interrupted.is_set():
                    failure = query.exception()
        finally:
            stopping.set()
            if query is not None:
                try:
                    query.stop()
                except Exception:  # noqa: BLE001 - a failed query is already stopped
                    pass
            shutil.rmtree(checkpoint, ignore_errors=True)
        if failure is not None:
            from ..manager.summary import error_summary

            raise StreamJobError(f"the query failed: {error_summary(failure)}")
        if interrupted.is_set():
            self.echo()  # after the terminal's ^C
        self.echo(printer.footer(interrupted.is_set()))

    def close(self) -> None:
        """Stop Spark if a preview started it (for a client whose Spark serves nothing
        else: ``-e``; the shell's Spark also runs the jobs it hosts, and the shell stops
        it itself)."""
        if self.started:
            from ..spark.session import stop_spark

            stop_spark()


@contextlib.contextmanager
def ctrl_c_sets(*events: threading.Event):
    """Inside the block, Ctrl-C (SIGINT) sets ``events`` instead of raising
    KeyboardInterrupt. Outside the main thread, a no-op.

    Why: a KeyboardInterrupt lands wherever the main thread is, in the middle of a Py4J
    call too; and stopping a preview while its micro-batch runs must go one way only
    (:meth:`Previews.run`): the batch function, told by ``stopping``, swallows the error of
    its cancelled Spark job, so that no Py4J error reaches Spark's stream thread. There,
    StreamExecution.isInterruptionException (SPARK-39218) matches the error's message
    with a regular expression that overflows the JVM's stack on a long message: Ctrl-C
    printed a 1,000-line java.lang.StackOverflowError (issue 16)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame) -> None:
        for event in events:
            event.set()

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
