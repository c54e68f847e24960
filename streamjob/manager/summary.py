"""One line a user can act on from a failed query (:func:`error_summary`): what the
job's error, its run's cause and a preview's refusal show, never a Python or Java trace
(DESIGN §9; the trace stays in the Spark log and, under ``--debug``, on the console)."""

from __future__ import annotations

import re

from ..exceptions import UserFunctionError

__all__ = ["error_summary"]

_OUR_ERROR = re.compile(r"^\s*streamjob(?:\.\w+)+: (.+?)(?:\s+SQLSTATE: \w+)?$", re.M)
#: Spark's error of a JVM user function (a Hive UDF class) that threw: its name as Spark
#: shows it (the class, in backquoted parts), the exception's class and message.
_JVM_UDF_ERROR = re.compile(
    r"\[FAILED_EXECUTE_UDF\] User defined function \((.+?): \(.*?\) => [^)]*\) failed due "
    r"to: ([\w.$]+): (.+?)(?:\.? SQLSTATE: \w+)?$", re.M)


def error_summary(exc: BaseException, functions: dict[str, str] | None = None) -> str:
    """One line a user can act on from a Spark/Python failure ``exc`` (no JVM stack
    trace): a user function's error in its wire form rendered
    (:class:`~streamjob.exceptions.UserFunctionError`); else the message of our own error
    raised in a Python worker (the last ``streamjob.<module>.<Class>: message`` line of
    the traceback PySpark's ``PythonException`` carries); else a Hive UDF class that threw
    (Spark's ``FAILED_EXECUTE_UDF``), named by ``functions`` (its class -> ``db.name``),
    with the exception's type and message; else the first line that is no trace line, at
    most 500 characters; else the exception's class name."""
    text = str(getattr(exc, "desc", None) or exc)
    function = UserFunctionError.from_text(text)  # a user function's, in its wire form
    if function is not None:
        return str(function)
    # an error raised by our own code in a Python worker (source, sink) ends its traceback
    # as "streamjob.<module>.<ErrorClass>: <message>": that message is what the user needs
    ours = _OUR_ERROR.findall(text)
    if ours:
        return ours[-1].strip()
    jvm = _JVM_UDF_ERROR.search(text)
    if jvm is not None:
        shown = jvm.group(1).replace("`", "")
        name = (functions or {}).get(shown, shown)
        return (f"function {name} raised {jvm.group(2).rsplit('.', 1)[-1]}: "
                f"{jvm.group(3).strip()}")[:500]
    for marker in ("ConnectorError: ", "StreamJobError: "):
        idx = text.rfind(marker)
        if idx >= 0:
            tail = text[idx:].split("\n", 1)[0]
            return tail.split(": ", 1)[1] if ": " in tail else tail
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if not ln.startswith(("at ", "File ", "Traceback", "===", "JVM stacktrace")):
            return ln[:500]
    return type(exc).__name__
