"""Variables in StreamSQL files: ``${NAME}`` and ``${NAME:-default}``.

Scripts name environment-specific values (a broker address, a path) as variables, the
way Hive scripts use ``${hivevar:x}``. Values come from, first match wins: ``--var
NAME=VALUE`` on the command line, the environment, then the built-in ``STREAMJOB_HOME``
(the resolved home). A variable with no value and no default is an error naming its
line and column. Substitution keeps line numbers (values are single-line); text in\n``--`` and ``/* */`` comments is left as written.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Mapping

from .exceptions import ParseError, StreamJobError

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def read_script(path: str | os.PathLike) -> str:
    """The text of the StreamSQL file at ``path`` (UTF-8, as Hive and Spark read scripts).

    Raises:
        StreamJobError: the file cannot be read (the OS's reason).
        ParseError: the bytes are not UTF-8, at the line and column of the first bad byte.
    """
    from .grammar.limits import decode_script

    try:
        data = Path(path).expanduser().read_bytes()
    except OSError as exc:
        raise StreamJobError(f"cannot read {path}: {exc.strerror}") from None
    return decode_script(data, source=str(path))


def substitute(text: str, variables: Mapping[str, str], source: str | None = None) -> str:
    """Replace every ``${NAME}`` / ``${NAME:-default}`` in ``text`` by its value, as a value.

    A value fills the one token its ``${...}`` stands in, and may not change the
    statement's structure (docs/reliability.md, "Variables are values"):

    * inside a quoted string or name (a property value, a literal in a job's query, a
      backquoted name) it may hold anything but quotes (``'``, ``"``, backquote), a
      backslash and control characters (newlines included), which would end the string or
      escape out of it;
    * anywhere else (a bare word, or the body of a job's quoted query outside its
      literals) it must be a single name (``a``, ``db.t``) or number (``42``, ``-1.5``).

    ``${env:NAME}`` and ``${file:PATH}`` are not variables: they stay as written (secret
    references, resolved when a job starts). Variables in comments stay as written.

    Raises:
        ParseError: a variable has no value and no default, or its value would change the
            statement's structure; at the line and column of its ``${``, naming the
            variable (never its value, which may be a secret).
    """

    def value(m: re.Match, context: str) -> str:
        name, default = m.group(1), m.group(2)
        if name in variables:
            result = str(variables[name])
        elif name in os.environ:
            result = os.environ[name]
        elif default is not None:
            result = default
        else:
            raise _located(text, m, source, f"variable ${{{name}}} has no value: pass --var "
                           f"{name}=... or set it in the environment")
        problem = _structure_problem(result, context)
        if problem:
            raise _located(text, m, source, f"the value of ${{{name}}} {problem}; variables are "
                           "substituted as values and cannot add or end statements, strings or "
                           "tokens")
        return result

    out, pos = [], 0
    for m, context in _variables(text):
        out.append(text[pos:m.start()])
        out.append(value(m, context))
        pos = m.end()
    out.append(text[pos:])
    return "".join(out)


#: A value standing alone: one (dotted) name or one number.
_TOKEN_VALUE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*|[-+]?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?")
#: What may not appear in a value inside quotes: quotes, backslash, control characters.
_QUOTED_FORBIDDEN = re.compile(r"['\"`\\\x00-\x1f\x7f]")
#: A double-quoted string right after ``AS (`` is a job's query (CREATE STREAMJOB).
_QUERY_STRING_BEFORE = re.compile(r"\bas\s*\(\s*$", re.IGNORECASE)


def _structure_problem(value: str, context: str) -> str | None:
    """Why ``value`` cannot stand in ``context`` ("bare" or "quoted"), or None."""
    if context == "quoted":
        bad = _QUOTED_FORBIDDEN.search(value)
        if bad is None:
            return None
        what = {"'": "a quote (')", '"': 'a quote (")', "`": "a backquote", "\\": "a backslash"}
        return f"holds {what.get(bad.group(), 'a control character (e.g. a line break)')} inside a string"
    if _TOKEN_VALUE.fullmatch(value):
        return None
    return "is not a single name or number where it stands (outside quotes)"


def _variables(text: str):
    """``(match, context)`` for each ``${NAME}`` outside comments, in order; context is
    "quoted" inside a string literal or backquoted name (at the statement level, or a
    literal inside a job's double-quoted query) and "bare" elsewhere (including a job's
    query outside its literals)."""
    contexts = None  # scanned (in Python, character by character) only when needed
    for m in _VAR.finditer(text):
        contexts = contexts or _contexts(text)
        context = contexts(m.start())
        if context != "comment":
            yield m, context


def _contexts(text: str):
    """A function offset -> "comment" | "quoted" | "bare", from one scan of ``text``.

    Levels: StreamSQL strings (``'``, ``"``) and names (backquotes); inside a
    double-quoted job query (after ``AS (``), the query's own literals (``'``) and names.
    """
    spans: list[tuple[int, int, str]] = []  # (start, end, kind) of non-bare regions
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("--", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            spans.append((i, end, "comment"))
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            spans.append((i, end, "comment"))
            i = end
        elif c in "'\"`":
            end = _string_end(text, i)
            if c == '"' and _QUERY_STRING_BEFORE.search(text, 0, i):
                spans.extend(_query_literals(text, i + 1, end - 1))
            else:
                spans.append((i, end, "quoted"))
            i = end
        else:
            i += 1

    def context(offset: int) -> str:
        for start, end, kind in spans:
            if start <= offset < end:
                return kind
        return "bare"

    return context


def _string_end(text: str, start: int) -> int:
    """Offset just past the string or name opened at ``start`` (backslash escapes and
    doubled quotes as StreamSQL reads them); the text's end when it is not closed."""
    quote, i, n = text[start], start + 1, len(text)
    while i < n:
        if text[i] == "\\" and quote != "`":
            i += 2
            continue
        if text[i] == quote:
            if i + 1 < n and text[i + 1] == quote:
                i += 2
                continue
            return i + 1
        i += 1
    return n


def _query_literals(text: str, start: int, end: int) -> list[tuple[int, int, str]]:
    """The quoted regions (``'...'`` literals, backquoted names) of a job's query held in
    ``text[start:end]`` (inside its double quotes)."""
    spans, i = [], start
    while i < end:
        if text[i] in "'`":
            close = min(_string_end(text, i), end)
            spans.append((i, close, "quoted"))
            i = close
        else:
            i += 1
    return spans


def _located(text: str, m: re.Match, source: str | None, message: str) -> ParseError:
    line = text.count("\n", 0, m.start()) + 1
    col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
    src_line = text.splitlines()[line - 1]
    return ParseError(message, line=line, column=col, text=m.group(0),
                      snippet=f"{src_line}\n{' ' * (col - 1)}^", source=source)
