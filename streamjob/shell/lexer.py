"""Syntax highlighting of StreamSQL in the shell: a pygments lexer, and the keyword lists
that the highlighter and the completer share (taken from :mod:`streamjob.grammar.lexical`,
which reads them from the grammar).

The lexer knows Slipstream's statements (``CREATE STREAMJOB``, ``TBLPROPERTIES``,
``STREAMWINDOW`` ...), the SQL of queries, Hive column types, strings in single or double
quotes (double-quoted text is a string in StreamSQL, not a name), backquoted names,
``--`` and ``/* */`` comments and the shell's backslash commands. Unterminated strings
and comments are highlighted as such up to the end of the input.
"""

from __future__ import annotations

import re

from pygments.lexer import RegexLexer, words
from pygments.token import (Comment, Keyword, Name, Number, Operator, Punctuation, String,
                            Text, Whitespace)

from ..grammar import lexical

#: Keywords that begin a statement in the shell (completion offers them at a
#: statement's start): the grammar's (:data:`~streamjob.grammar.lexical.STATEMENT_KEYWORDS`)
#: and the shell's previews, ``SELECT`` and ``WITH``.
STATEMENT_KEYWORDS = tuple(sorted({k.upper() for k in lexical.STATEMENT_KEYWORDS}
                                  | {"SELECT", "WITH"}))

#: Every keyword, sorted: :data:`streamjob.grammar.lexical.KEYWORDS` (the grammar's,
#: read from ``streamsql.lark``, and the queries'), the one vocabulary of the parser,
#: this highlighter and the completer.
KEYWORDS = lexical.KEYWORDS

#: Hive/Spark column types.
TYPES = ("array", "bigint", "binary", "boolean", "char", "date", "decimal", "double", "float",
         "int", "integer", "map", "smallint", "string", "struct", "timestamp", "tinyint",
         "varchar")


class StreamSqlLexer(RegexLexer):
    """A pygments lexer for StreamSQL as typed into the shell (see the module docstring)."""

    name = "StreamSQL"
    aliases = ["streamsql"]
    flags = re.IGNORECASE | re.MULTILINE

    tokens = {
        "root": [
            (r"\s+", Whitespace),
            (r"--[^\n]*", Comment.Single),
            (r"/\*", Comment.Multiline, "comment"),
            (r"\\\S*", Keyword.Pseudo),
            (r"'(?:[^'\\]|\\[\s\S]|'')*(?:'|\Z)", String.Single),
            (r'"(?:[^"\\]|\\[\s\S]|"")*(?:"|\Z)', String.Double),
            (r"`(?:[^`]|``)*(?:`|\Z)", Name.Variable),
            (words(KEYWORDS, prefix=r"\b", suffix=r"\b"), Keyword),
            (words(TYPES, prefix=r"\b", suffix=r"\b"), Name.Builtin),
            (r"[0-9]+(?:\.[0-9]+)?", Number),
            (r"[a-z_][a-z0-9_]*", Name),
            (r"[<>=!]=?|[+\-*/%|]", Operator),
            (r"[;:(),.\[\]]", Punctuation),
            (r".", Text),
        ],
        "comment": [
            (r"[^*/]+", Comment.Multiline),
            (r"\*/", Comment.Multiline, "#pop"),
            (r"[*/]", Comment.Multiline),
        ],
    }
