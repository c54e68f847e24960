"""Input limits checked before any recursive parser sees a script.

lark builds its tree and sqlglot parses and generates queries by recursion, so a script
nested a few dozen levels deep used to end in ``internal error: RecursionError``; bytes
that are not UTF-8 ended in ``UnicodeDecodeError`` and a multi-megabyte line printed
itself whole in an error. Each of these is now a located
:class:`~streamjob.exceptions.ParseError` (line, column, a sentence), raised here:

* :func:`decode_script` turns a file's bytes into text, refusing invalid UTF-8 at the
  line and column of the first bad byte (StreamSQL files are UTF-8, as Hive and Spark
  read them).
* :func:`check_text` refuses text that still carries undecodable bytes (``-e``
  arguments and terminals decode with ``surrogateescape``), a NUL character (Spark's
  and the JVM's strings end at one in places, and no StreamSQL text needs one: write
  ``'\\0'`` or ``chr(0)`` in a query), a line longer than :data:`MAX_LINE_CHARS`, and
  parentheses nested deeper than :data:`MAX_NESTING`.

A query's other nesting forms (``[0]`` subscripts, CASE, NOT and unary minus chains)
are bounded by :mod:`streamjob.policy` with :data:`MAX_NESTING` before sqlglot parses
it and :data:`MAX_EXPRESSION_DEPTH` after, and a query is at most
:data:`MAX_QUERY_CHARS` long.

The limits are far beyond hand-written SQL (Spark's own parser has none, but its
analyzer and our planner recurse as Python does) and documented in docs/reliability.md.
"""

from __future__ import annotations

import re

from streamjob.exceptions import ParseError

__all__ = ["MAX_EXPRESSION_DEPTH", "MAX_LINE_CHARS", "MAX_NESTING", "MAX_QUERY_CHARS",
           "check_text", "decode_script", "nesting_error"]

#: Longest accepted line, in characters (1 MiB of ASCII). Longer lines are refused at
#: the column where they pass the limit.
MAX_LINE_CHARS = 1 << 20
#: Deepest accepted nesting of parentheses (calls, sub-expressions, sub-queries), in
#: levels. sqlglot needs about 20 Python frames a level; 45 levels exhausted Python's
#: default recursion limit of 1,000 frames.
MAX_NESTING = 32
#: Deepest accepted expression tree of a query, in levels (a left-deep chain of one
#: binary operator is one level): sqlglot's generator spends about 5 Python frames a
#: level, and 200 nested ``[0]`` subscripts exhausted Python's default limit of 1,000.
MAX_EXPRESSION_DEPTH = 128
#: Longest accepted query (the text of a job's AS ("...") or of a derived stream's
#: select), in characters (1 MiB of ASCII). sqlglot's tokenizer walks a query in Python,
#: comment included, several times (about 0.5 s and 6 MB a MiB).
MAX_QUERY_CHARS = 1 << 20
#: Characters standing for bytes that were not UTF-8 (Python's ``surrogateescape``).
_UNDECODED = re.compile("[\udc80-\udcff]")


def _snippet(line_text: str, column: int, width: int = 120) -> str:
    """The line around ``column`` (1-based) with a caret under it, at most ``width``
    characters of the line shown."""
    start = max(0, column - 1 - width // 2) if len(line_text) > width else 0
    shown = line_text[start:start + width]
    prefix = "..." if start > 0 else ""
    suffix = "..." if start + width < len(line_text) else ""
    pad = "".join("\t" if ch == "\t" else " " for ch in shown[: column - 1 - start])
    return f"{prefix}{shown}{suffix}\n{' ' * len(prefix)}{pad}^"


def _position(text: str, offset: int) -> tuple[int, int, str]:
    """1-based (line, column) of ``offset`` in ``text`` and that line's text."""
    line_start = text.rfind("\n", 0, offset) + 1
    line_end = text.find("\n", offset)
    line_text = text[line_start: line_end if line_end >= 0 else len(text)]
    return text.count("\n", 0, line_start) + 1, offset - line_start + 1, line_text


def decode_script(data: bytes, source: str | None = None) -> str:
    """The text of a StreamSQL file's bytes (UTF-8; a leading byte-order mark is kept for
    the parser, which blanks it).

    Raises:
        ParseError: the bytes are not UTF-8; located at the first invalid byte, whose
            value the message gives (the rest of the line shown with replacement marks).
    """
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = data[: exc.start].decode("utf-8", errors="replace")
        text = before + data[exc.start:].decode("utf-8", errors="replace")
        line, column, line_text = _position(text, len(before))
        raise ParseError(
            f"invalid UTF-8 byte 0x{data[exc.start]:02X}: StreamSQL files must be UTF-8 text "
            "(convert the file, e.g. iconv -f LATIN1 -t UTF-8)",
            line, column, f"0x{data[exc.start]:02X}", _snippet(line_text, column), source,
        ) from None


def nesting_error(text: str, offset: int, source: str | None = None, what: str = "the script") -> ParseError:
    """The error for a parenthesis at ``offset`` of ``text`` that opens level
    :data:`MAX_NESTING` + 1."""
    line, column, line_text = _position(text, offset)
    return ParseError(
        f"{what} nests parentheses more than {MAX_NESTING} levels deep here; "
        "split the expression (e.g. into a derived stream) or flatten it",
        line, column, "(", _snippet(line_text, column), source,
    )


def check_text(text: str, source: str | None = None) -> None:
    """Refuse what no recursive parser should be given.

    Checks: a NUL character; then, in order of position, characters standing for undecodable bytes
    (``\\udc80``-``\\udcff``, Python's ``surrogateescape``), lines longer than
    :data:`MAX_LINE_CHARS`, and parentheses nested deeper than :data:`MAX_NESTING`
    outside single-quoted literals, backquoted names and comments (double-quoted text is
    counted: it holds the jobs' queries).

    Raises:
        ParseError: at the first offending character (the first NUL before anything).
    """
    nul = text.find("\x00")
    if nul >= 0:
        line, column, line_text = _position(text, nul)
        raise ParseError(
            "a NUL character (\\x00) is not allowed in a script; write '\\0' or chr(0) in "
            "a query if a value needs one",
            line, column, "\\x00", _snippet(line_text.replace("\x00", " "), column), source,
        )
    bad = _UNDECODED.search(text)
    if bad:
        line, column, line_text = _position(text, bad.start())
        byte = ord(bad.group()) - 0xDC00
        shown = line_text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        raise ParseError(
            f"invalid UTF-8 byte 0x{byte:02X}: statements must be UTF-8 text",
            line, column, f"0x{byte:02X}", _snippet(shown, column), source,
        )
    start = 0
    while start <= len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        if end - start > MAX_LINE_CHARS:
            line, column, line_text = _position(text, start + MAX_LINE_CHARS)
            raise ParseError(
                f"line {line} is longer than {MAX_LINE_CHARS:,} characters; "
                "break it up (statements may span lines)",
                line, column, "", _snippet(line_text, column), source,
            )
        start = end + 1
    offset = _too_deep(text)
    if offset is not None:
        raise nesting_error(text, offset, source)


def _too_deep(text: str) -> int | None:
    """Offset of the first ``(`` that opens level MAX_NESTING + 1, or None."""
    depth, i, n, quote = 0, 0, len(text), None
    while i < n:
        c = text[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in "'`":
            quote = c
        elif c == "-" and text.startswith("--", i):
            nl = text.find("\n", i)
            i = n if nl < 0 else nl
            continue
        elif c == "/" and text.startswith("/*", i):
            close = text.find("*/", i + 2)
            i = n if close < 0 else close + 2
            continue
        elif c == "(":
            depth += 1
            if depth > MAX_NESTING:
                return i
        elif c == ")":
            depth = max(depth - 1, 0)
        elif c == ";":
            depth = 0
        i += 1
    return None
