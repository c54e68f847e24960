"""Column completion in a query, as pgcli does it: where a query expects a column (after
``SELECT``, ``DISTINCT``, a ``,`` of the select list, ``WHERE``, ``AND``/``OR``/``NOT``,
``ON``, ``GROUP BY``/``ORDER BY``, ``HAVING``, an operator or ``(``), the shell offers
the columns of the streams and tables the query reads (``FROM``/``JOIN``, anywhere in
the statement, also after the cursor); after ``alias.`` or ``name.`` only that object's.

Pure token functions over :func:`streamjob.client.splitter.tokenize`'s tokens (no
prompt_toolkit, no catalog: the columns come from
:class:`streamjob.shell.completion.Names`).
"""

from __future__ import annotations

from ..client.splitter import Token

__all__ = ["expects_column", "references"]

#: The clauses in which a word is a column (the last such keyword before the cursor).
COLUMN_CLAUSES = ("SELECT", "WHERE", "ON", "BY", "HAVING")
#: Tokens after which, in such a clause, a column may start.
_BEFORE_COLUMN = {"SELECT", "DISTINCT", "WHERE", "AND", "OR", "NOT", "ON", "BY", "HAVING",
                  "WHEN", "THEN", "ELSE", "CASE", "BETWEEN", "IN", "LIKE",
                  ",", "(", "=", "<", ">", "!", "+", "-", "*", "/", "%"}
#: Keywords that end a clause the columns belong to (the last one before the cursor wins).
_CLAUSES = COLUMN_CLAUSES + ("FROM", "JOIN", "LIMIT", "INTO", "AS", "STREAMWINDOW",
                              "SESSIONWINDOW", "UNION")
#: Words after a FROM/JOIN name that are not an alias.
_NOT_ALIAS = {"WHERE", "JOIN", "INNER", "LEFT", "RIGHT", "FULL", "CROSS", "OUTER", "ON",
              "GROUP", "ORDER", "HAVING", "LIMIT", "UNION", "STREAMWINDOW", "SESSIONWINDOW",
              "USING", "WINDOW", "AS"}


def _word(t: Token) -> str:
    return t.text.upper() if t.kind == "word" else t.text


def expects_column(sig: list[Token], prefix: str) -> bool:
    """True when the word being typed (``prefix``, after the significant tokens ``sig``
    of a query) is where a column goes (see the module docstring)."""
    clause = next((_word(t) for t in reversed(sig) if _word(t) in _CLAUSES), None)
    if clause not in COLUMN_CLAUSES or not sig:
        return False
    if clause == "BY" and len(sig) >= 2 and _word(sig[-1]) == "BY" \
            and _word(sig[-2]) not in ("GROUP", "ORDER"):
        return False
    return _word(sig[-1]) in _BEFORE_COLUMN or (bool(prefix) and _word(sig[-1]) != "AS")


def _name_at(sig: list[Token], i: int) -> tuple[str, int]:
    """The (dotted, maybe backquoted) name starting at ``sig[i]`` and the index after it;
    ``("", i)`` when none starts there."""
    parts: list[str] = []
    while i < len(sig) and sig[i].kind in ("word", "name"):
        parts.append(sig[i].text.strip("`"))
        if i + 2 < len(sig) and sig[i + 1].text == "." and sig[i + 2].kind in ("word", "name"):
            i += 2
            continue
        i += 1
        break
    return ".".join(parts), i


def references(sig: list[Token]) -> list[tuple[str, str | None]]:
    """The objects a query reads, ``(name, alias or None)`` in order: each name after
    ``FROM`` or ``JOIN`` (and after a ``,`` of a FROM list), lower-cased, ``default.``
    dropped."""
    out: list[tuple[str, str | None]] = []
    i = 0
    while i < len(sig):
        if _word(sig[i]) not in ("FROM", "JOIN"):
            i += 1
            continue
        i += 1
        while True:
            name, i = _name_at(sig, i)
            if not name:
                break
            alias = None
            if i < len(sig) and _word(sig[i]) == "AS" and i + 1 < len(sig):
                alias, i = sig[i + 1].text.strip("`"), i + 2
            elif i < len(sig) and sig[i].kind in ("word", "name") \
                    and _word(sig[i]) not in _NOT_ALIAS:
                alias, i = sig[i].text.strip("`"), i + 1
            low = name.lower()
            out.append((low[len("default."):] if low.startswith("default.") else low,
                        alias.lower() if alias else None))
            if i < len(sig) and sig[i].text == ",":
                i += 1
                continue
            break
    return out
