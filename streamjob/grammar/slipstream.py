"""Slipstream's forms in the parse tree (issue 18), kept apart from the core builder:
``ROW FORMAT SERDE 'class' [WITH SERDEPROPERTIES (...)]`` and a bare ``INSERT INTO t
SELECT ...`` (an implicit job; the executor's :mod:`streamjob.executor.insert`).
:class:`SlipstreamForms` is a mixin of :class:`streamjob.grammar.transform.Builder`,
whose helpers (``error``, ``position``, ``find``, ``properties``, ``raw_tail``) it uses.
"""

from __future__ import annotations

import re

from lark import Tree

from streamjob.grammar.lexical import unescape_string
from streamjob.grammar.statements import InsertInto, QualifiedName, RowFormat

__all__ = ["SlipstreamForms"]

_NAME = r"[A-Za-z_][A-Za-z0-9_]*|`(?:[^`]|``)*`"


def _name_text(text: str) -> str:
    """An identifier as :func:`ident_value` gives it: unquoted lower-cased, a
    backquoted one unquoted with its case kept."""
    if text.startswith("`"):
        return text[1:-1].replace("``", "`")
    return text.lower()


class SlipstreamForms:
    """Builder methods for the Slipstream forms (see the module docstring)."""

    def row_format_serde(self, tree: Tree) -> RowFormat:
        """``ROW FORMAT SERDE 'class' [WITH SERDEPROPERTIES (...)]``: the class and its
        properties as written (keys lower-cased); their meaning is the executor's."""
        token = tree.children[0]
        serde = unescape_string(token.value).strip()
        if not serde:
            raise self.error("the SerDe class is empty", token.start_pos, token.value)
        self.locations["serde"] = self.position(token.start_pos)
        found = self.find(tree, "serdeproperties")
        return RowFormat(serde=serde,
                         serde_properties=self.properties(found) if found is not None else ())

    def any_row_format(self, found: dict[str, Tree]) -> RowFormat | None:
        if "row_format" in found:
            return self.row_format(found["row_format"])
        if "row_format_serde" in found:
            return self.row_format_serde(found["row_format_serde"])
        return None

    _INSERT_RE = re.compile(
        r"insert\s+into\s+(?:table\s+)?(" + _NAME + r")(?:\s*\.\s*(" + _NAME + r"))?"
        r"(?=[\s(]|$)", re.IGNORECASE)

    def _insert_into(self, tree: Tree):
        """A bare INSERT: its query is the statement's whole text up to the ``;``; the
        target is the name after ``INSERT INTO [TABLE]``."""
        token = tree.children[0]
        start, end = self.raw_tail(token)
        query = self.text[start:end]
        match = self._INSERT_RE.match(query)
        if match is None:
            after = re.match(r"insert\s+(\S*)", query, re.IGNORECASE)
            offset = start + (after.start(1) if after and after.group(1) else 0)
            raise self.error("expected INSERT INTO <table> SELECT ... (a bare INSERT starts "
                             "a streamjob writing the table)", offset)
        first, second = match.group(1), match.group(2)
        self.locations["name"] = self.position(start + match.start(1))
        if second is not None:
            target = QualifiedName(_name_text(second), _name_text(first))
        else:
            target = QualifiedName(_name_text(first))
        if not query[match.end():].strip():
            raise self.error("the INSERT has no SELECT", start + match.end(), "")
        return InsertInto, dict(target=target, query=query)
