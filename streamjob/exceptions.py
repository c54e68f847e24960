"""The error types of streamjob, all under one root, :class:`StreamJobError`.

Every error a user can cause or meet (bad SQL, an unknown object, an unreachable
broker, a failed job) is one of these; the CLI prints them as one red line and exits 1.
Anything else escaping to the CLI is a bug and is reported as such (with the trace only
under ``--debug``).
"""

from __future__ import annotations


class StreamJobError(Exception):
    """Root of every error streamjob raises on purpose.

    Any error may carry where in a script it arose (as sqlglot's ``ParseError`` does):

    Attributes:
        message: what is wrong, in one sentence.
        line: 1-based line of the offending text in the script (or None if unknown).
        column: 1-based column of the offending text (or None).
        text: the offending token or text, as written.
        snippet: the source line with a caret under the column, for display.
        source: name of the script (file path, ``<stdin>``), when known.
        note: one more line for the reader, printed after the snippet (for a script
            that failed while being applied: which of its statements took effect).

    ``str(error)`` is ``FILE:LINE:COL: message`` (or ``line L, column C: message``) once
    a position is known, else the message alone.
    """

    def __init__(
        self,
        message: str = "",
        line: int | None = None,
        column: int | None = None,
        text: str | None = None,
        snippet: str | None = None,
        source: str | None = None,
    ) -> None:
        self.message = message
        self.line = line
        self.column = column
        self.text = text
        self.snippet = snippet
        self.source = source
        self.note: str | None = None
        super().__init__(message)

    def locate(self, line: int, column: int, source_text: str | None = None,
               source: str | None = None) -> "StreamJobError":
        """Set the position (if none is known yet), and the snippet from ``source_text``
        (the whole script). Returns self, for ``raise err.locate(...)``."""
        if self.line is None:
            self.line, self.column = line, column
        if source and not self.source:
            self.source = source
        if source_text is not None and not self.snippet and self.line is not None:
            lines = source_text.splitlines()
            if 0 < self.line <= len(lines):
                self.snippet = f"{lines[self.line - 1]}\n{' ' * ((self.column or 1) - 1)}^"
        return self

    def position_prefix(self) -> str:
        """The position prefix of ``str(self)``: ``FILE:LINE:COL: ``, ``line L, column
        C: `` or empty when no position is known."""
        if self.line is None:
            return ""
        if self.source:
            return f"{self.source}:{self.line}:{self.column}: "
        return f"line {self.line}, column {self.column}: "

    def __str__(self) -> str:
        return f"{self.position_prefix()}{self.message}"


class LocatedError(StreamJobError):
    """An error about a place in a script: a statement that does not parse
    (:class:`ParseError`) or does not make sense (:class:`ValidationError`). Both carry
    the position fields of :class:`StreamJobError` (line, column, text, snippet, source)
    and set them when known; neither is a kind of the other."""


class ParseError(LocatedError):
    """A statement could not be parsed; always located (see :class:`StreamJobError`)."""


class ValidationError(LocatedError):
    """A statement parsed but does not make sense against the catalog or the rules.

    Same position attributes as :class:`ParseError` (line and column point at the
    offending name or property when known), plus, keyword-only at construction:

    Attributes:
        key: the property (or option) the error is about, lower case, or None; the
            executor points the error at that property in the statement.
        bad_value: True when the property's value is wrong (the position is then the
            value's), False when the key itself is (unknown, misplaced, missing).
    """

    def __init__(self, message: str = "", line: int | None = None, column: int | None = None,
                 text: str | None = None, snippet: str | None = None,
                 source: str | None = None, *, key: str | None = None,
                 bad_value: bool = False) -> None:
        super().__init__(message, line, column, text, snippet, source)
        self.key = key
        self.bad_value = bad_value


class PropertyError(ValidationError):
    """A job, engine or connector property is unknown, mistyped or out of range."""


class AccessDeniedError(ValidationError):
    """The principal's role does not allow the statement (docs/security.md): a viewer
    reaching beyond the declared objects, for one. Located like a ValidationError; the
    HTTP API answers it with 403."""


class CatalogError(StreamJobError):
    """The catalog database cannot be reached or refused an operation."""


class ObjectExistsError(CatalogError):
    """CREATE of a stream, table or job that already exists (without IF NOT EXISTS)."""


class ObjectNotFoundError(CatalogError):
    """A statement names a stream, table or job the catalog does not hold."""


class ObjectInUseError(CatalogError):
    """DROP of a stream or table that a job still reads or writes; names the job."""


class ConnectorError(StreamJobError):
    """A source or sink cannot do its work: broker unreachable, bad record, schema mismatch."""


class JobError(StreamJobError):
    """A job cannot be started, stopped or kept running (includes failover giving up)."""


class UserFunctionError(JobError):
    """A user function (CREATE FUNCTION, docs/functions.md) raised inside a micro-batch.

    Raised in a Spark Python worker by the function's wrapper (streamjob/spark/udf.py),
    the driver sees it only as text: PySpark's ``PythonException`` holding the worker's
    traceback, which ends ``streamjob.exceptions.UserFunctionError: <str(error)>``. So
    the worker's error is written in its *wire* form, :attr:`marker` followed by its
    fields as one line of JSON (:meth:`wire`), and the driver rebuilds the error from
    that text (:meth:`from_text`), adding the failed micro-batch's source position
    (:meth:`at`). Classified by the marker of this class, never by the wording of the
    user's exception (the same idea as :class:`PermanentFailure`'s markers).

    Attributes:
        function: the function's name as the query calls it.
        error_type: the exception's class name (``ValueError``).
        error_message: ``str(exception)``, at most 500 characters.
        arguments: the first failing row's argument values, ``((parameter, repr of the
            value, at most 80 characters), ...)``, in call order; empty when no single
            row fails on its own (the function failed on the batch as a whole). Only the
            values the query passed to the function, never other columns.
        batch: the failed micro-batch's id, or None when unknown.
        position: where the batch's input lies, e.g. ``topic t partition 0 offsets
            [120, 240)``, ``; ``-joined for several partitions and sources; None when
            the source has no such position or the checkpoint was not readable.
        inputs: the batch's source offsets as the checkpoint's offsets log writes
            them (one JSON text per source), for telling a repeated failure on the same
            input (:class:`RepeatedFunctionError`); empty when unknown.
        record: the failing record's own position, ``topic t partition 0 offset 137``,
            when the function was called on a Kafka source's rows with their hidden
            position arguments (docs/functions.md, "Failures name the function") and a
            single row fails on its own; None otherwise.
    """

    marker: str = "[streamjob:user-function]"

    def __init__(self, function: str = "", error_type: str = "", error_message: str = "",
                 arguments: tuple[tuple[str, str], ...] = (), batch: int | None = None,
                 position: str | None = None, inputs: tuple[str, ...] = (),
                 record: str | None = None) -> None:
        self.function = function
        self.record = record
        self.error_type = error_type
        self.error_message = error_message[:500]
        self.arguments = tuple((str(k), str(v)) for k, v in arguments)
        self.batch = batch
        self.position = position
        self.inputs = tuple(inputs)
        self._wire = False
        super().__init__(self._describe())

    def _describe(self) -> str:
        text = f"function {self.function} raised {self.error_type}: {self.error_message}"
        if self.arguments:
            args = ", ".join(f"{k}={v}" for k, v in self.arguments)
            text += f"; first failing row: {self.function}({args})"
        if self.record:
            text += f"; failing record: {self.record}"
        if self.batch is not None:
            text += f"; in micro-batch {self.batch}"
            if self.position:
                text += f", input {self.position}"
        return text

    def same_failure(self, other: "UserFunctionError") -> bool:
        """True if ``other`` is this failure again: the same function, exception type
        and message, failing row, batch and batch input (a deterministic error)."""
        return (self.function, self.error_type, self.error_message, self.arguments,
                self.record, self.batch, self.inputs) == (
                    other.function, other.error_type, other.error_message, other.arguments,
                    other.record, other.batch, other.inputs) \
            and self.batch is not None

    def at(self, batch: int | None, position: str | None,
           inputs: tuple[str, ...] = ()) -> "UserFunctionError":
        """A copy placed in micro-batch ``batch`` with ``position`` and ``inputs`` (see
        the attributes)."""
        return type(self)(self.function, self.error_type, self.error_message,
                          self.arguments, batch, position, inputs, self.record)

    def wire(self) -> "UserFunctionError":
        """Self, made to print in the wire form (for raising in a Python worker)."""
        self._wire = True
        return self

    def __str__(self) -> str:
        if self._wire:
            import json

            return self.marker + " " + json.dumps(
                {"function": self.function, "type": self.error_type,
                 "message": self.error_message, "arguments": self.arguments,
                 "record": self.record})
        return f"{self.position_prefix()}{self.message}"

    @classmethod
    def from_text(cls, text: str) -> "UserFunctionError | None":
        """The error a Python worker raised, rebuilt from Spark's error text (the last
        wire form in it), or None if ``text`` holds none."""
        import json

        idx = text.rfind(UserFunctionError.marker + " {")
        if idx < 0:
            return None
        line = text[idx + len(UserFunctionError.marker) + 1:].split("\n", 1)[0]
        try:
            fields = json.JSONDecoder().raw_decode(line)[0]
            record = fields.get("record")
            return cls(str(fields["function"]), str(fields["type"]), str(fields["message"]),
                       tuple(tuple(a) for a in fields.get("arguments") or ()),
                       record=str(record) if record else None)
        except (ValueError, KeyError, TypeError):
            return None


class CheckpointError(StreamJobError):
    """A checkpoint cannot be recorded, restored or purged."""


class PermanentFailure(StreamJobError):
    """A failure of a job that no restart can fix (issue 16; the classification is
    :func:`streamjob.manager.failures.permanent_failure`). Mixed into the error kind it
    also is (a ConnectorError, a JobError, a ValidationError), so existing handlers of
    that kind still catch it.

    Each subclass has a :attr:`marker`, ``[streamjob:<kind>]``, that ``str(error)``
    writes at the start of its message, on the first line. Failover matches an error
    raised in this process by its class; one raised in a Spark Python worker (a data
    source, a UDF) reaches the driver only as text — PySpark's ``PythonException`` /
    ``StreamingQueryException`` whose message holds the worker's traceback, ending in
    ``module.Class: str(error)`` — and is matched by its marker there. The marker is the
    same idea as Spark's own ``[ERROR_CLASS]`` message prefix.

    Attributes:
        marker: the stable tag of the kind (class attribute; never reworded).
    """

    marker: str = ""

    def __str__(self) -> str:
        if not self.marker:
            return super().__str__()
        return f"{self.position_prefix()}{self.marker} {self.message}"


class DataLoss(PermanentFailure, ConnectorError):
    """Kafka offsets the job needs are gone from the broker (retention removed them, the
    topic was deleted and recreated or truncated) and ``fail.on.data.loss`` is true."""

    marker = "[streamjob:data-loss]"


class ChangedLogic(PermanentFailure, JobError):
    """A job's checkpoints were taken by a different query (checkpoint/fingerprint.py):
    Spark cannot resume them."""

    marker = "[streamjob:changed-logic]"


class InvalidConfiguration(PermanentFailure, ConnectorError):
    """A connector option has a value the connector refuses (raised where the option is
    read, which may be a Spark Python worker)."""

    marker = "[streamjob:invalid-config]"


class NotAppendOnly(PermanentFailure, ConnectorError):
    """A Delta stream reached a commit that deletes or rewrites rows, which a stream of
    appends cannot read (Delta's own streaming source fails the same way unless
    ``ignoreDeletes``, ``ignoreChanges`` or ``skipChangeCommits`` says otherwise). Every
    restart reaches the same commit again, so failover does not retry it."""

    marker = "[streamjob:not-append-only]"


class SchemaMismatch(PermanentFailure, ValidationError):
    """An existing sink table does not fit the table's declaration (a missing column, an
    incompatible column type, an extra NOT NULL column the sink cannot fill, or no unique
    key for an upsert). Raised before a job starts, or in a Spark worker that opens the
    sink; retrying cannot help, so failover does not retry it.

    Attributes:
        columns: the names of the mismatching columns (or key columns), in the order
            found (keyword-only at construction; empty when unknown).
    """

    marker = "[streamjob:sink-schema]"

    def __init__(self, message: str = "", *args, columns: tuple[str, ...] = (),
                 **kwargs) -> None:
        super().__init__(message, *args, **kwargs)
        self.columns = tuple(columns)


class RepeatedFunctionError(PermanentFailure, UserFunctionError):
    """A user function failed the same way on the same input at two attempts of a job
    (with no failure of another kind between them) (:meth:`UserFunctionError.same_failure`): a deterministic error,
    so failover ends the job FAILED rather than retrying it through its whole backoff
    (streamjob/manager/failures.py; Flink's non-recoverable failures, FLIP-304).
    Made by the job's runner from the second attempt's :class:`UserFunctionError`."""

    marker = "[streamjob:repeated-function-error]"
