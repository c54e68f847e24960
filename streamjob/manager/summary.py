"""One line a user can act on from a failed query (:func:`error_summary`): what the
job's error, its run's cause and a preview's refusal show, never a Python or Java trace
(DESIGN §9; the trace stays in the Spark log and, under ``--debug``, on the console)."""

from __future__ import annotations

import re

from ..exceptions import UserFunctionError

__all__ = ["error_summary"]

_OUR_ERROR = re.compile(r"^\s*streamjob(?:\.\w+)+: (.+?)(?:\s+SQLSTATE: \w+)?$", re.M)


def error_summary(exc: BaseException) -> str:
    """One line a user can act on from a Spark/Python failure ``exc`` (no JVM stack
    trace): a user function's error in its wire form rendered
    (:class:`~streamjob.exceptions.UserFunctionError`); else the message of our own error
    raised in a Python worker (the last ``streamjob.<module>.<Class>: message`` line of
    the traceback PySpark's ``PythonException`` carries); else the first line that is
    no trace line, at most 500 characters; else the exception's class name."""
    text = str(getattr(exc, "desc", None) or exc)
    function = UserFunctionError.from_text(text)  # a user function's, in its wire form
    if function is not None:
        return str(function)
    # an error raised by our own code in a Python worker (source, sink) ends its traceback
    # as "streamjob.<module>.<ErrorClass>: <message>": that message is what the user needs
    ours = _OUR_ERROR.findall(text)
    if ours:
        return ours[-1].strip()
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
