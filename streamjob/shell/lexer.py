"""Syntax highlighting of StreamSQL in the shell: a pygments lexer, and the keyword lists
that the highlighter and the completer share.

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

#: Keywords that begin a statement (completion offers them at a statement's start).
STATEMENT_KEYWORDS = ("ALTER", "CREATE", "DESC", "DESCRIBE", "DROP", "EXPLAIN", "INSERT", "LIST", "PRINT",
                      "RESET", "SELECT", "SET", "SHOW", "START", "STOP", "USE", "WITH")

#: StreamSQL's own keywords (DESIGN §2).
STREAMSQL_KEYWORDS = (
    "AS", "BY", "CHECKPOINT", "CHECKPOINTS", "COMMENT", "CREATE", "DELIMITED", "DESC",
    "DESCRIBE", "DROP", "EXISTS", "FIELDS", "FOR", "FORMAT", "FROM", "IF", "JOBPROPERTIES",
    "LENGTH", "LINES", "LIST", "LOCATION", "NOT", "PARTITIONED", "RESET", "ROW", "SET",
    "SHOW", "SLIDE", "START", "STOP", "STORED", "STREAM", "STREAMJOB", "STREAMJOBS",
    "SESSIONWINDOW", "GAP",
    "STREAMS", "STREAMWINDOW", "TABLE", "TABLES", "TBLPROPERTIES", "TERMINATED", "ALTER",
    # SHOW CREATE, databases, topics (issue 16)
    "BEGINNING", "CASCADE", "DATABASE", "DATABASES", "PRINT", "TOPICS", "USE",
    # EXPLAIN (issue 18)
    "EXPLAIN", "EXTENDED",
)

#: Keywords of the SQL inside queries (and their time units).
QUERY_KEYWORDS = (
    "ALL", "AND", "ASC", "BETWEEN", "CASE", "CAST", "CROSS", "DAY", "DAYS", "DISTINCT", "ELSE",
    "END", "FULL", "GROUP", "HAVING", "HOUR", "HOURS", "IN", "INNER", "INSERT", "INTERVAL",
    "INTO", "IS", "JOIN", "LEFT", "LIKE", "LIMIT", "MINUTE", "MINUTES", "NULL", "ON", "OR",
    "ORDER", "OUTER", "OVERWRITE", "RIGHT", "SECOND", "SECONDS", "SELECT", "THEN", "UNION",
    "WHEN", "WHERE", "WINDOW", "WITH", "TRUE", "FALSE",
)

#: Every keyword, sorted, without duplicates.
KEYWORDS = tuple(sorted(set(STREAMSQL_KEYWORDS) | set(QUERY_KEYWORDS) | set(STATEMENT_KEYWORDS)))

#: Hive/Spark column types.
TYPES = ("array", "bigint", "binary", "boolean", "char", "date", "decimal", "double", "float",
         "int", "integer", "map", "smallint", "string", "struct", "timestamp", "tinyint",
         "varchar")

#: Parquet, JSON, CSV: the formats of STORED AS.
FORMATS = ("CSV", "JSON", "PARQUET")


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
