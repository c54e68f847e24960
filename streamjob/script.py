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
from typing import Mapping

from .exceptions import ParseError

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def substitute(text: str, variables: Mapping[str, str], source: str | None = None) -> str:
    """Replace every ``${NAME}`` / ``${NAME:-default}`` in ``text``.

    Raises:
        ParseError: a variable has no value and no default (line, column, name).
    """

    def value(m: re.Match) -> str:
        name, default = m.group(1), m.group(2)
        if name in variables:
            return str(variables[name])
        if name in os.environ:
            return os.environ[name]
        if default is not None:
            return default
        line = text.count("\n", 0, m.start()) + 1
        col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
        src_line = text.splitlines()[line - 1]
        raise ParseError(
            f"variable ${{{name}}} has no value: pass --var {name}=... or set it in the environment",
            line=line, column=col, text=m.group(0),
            snippet=f"{src_line}\n{' ' * (col - 1)}^", source=source,
        )

    comments = list(_comment_spans(text))
    out, pos = [], 0
    for m in _VAR.finditer(text):
        if any(a <= m.start() < b for a, b in comments):
            continue
        out.append(text[pos:m.start()])
        out.append(value(m))
        pos = m.end()
    out.append(text[pos:])
    return "".join(out)


def _comment_spans(text: str):
    """``(start, end)`` of each ``--`` and ``/* */`` comment outside quoted strings;
    variables in comments are left alone."""
    i, n, quote = 0, len(text), None
    while i < n:
        c = text[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in "'\"`":
            quote = c
        elif text.startswith("--", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            yield i, end
            i = end
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            yield i, end
            i = end
            continue
        i += 1
