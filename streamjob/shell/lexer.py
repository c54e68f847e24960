"""Syntax highlighting of StreamSQL in the shell: a pygments lexer, and the keyword lists
that the highlighter and the completer share (taken from :mod:`streamjob.grammar.lexical`,
which reads them from the grammar).

The lexer knows Slipstream's statements (``CREATE STREAMJOB``, ``TBLPROPERTIES``,
``STREAMWINDOW`` ...), the SQL of queries, Hive column types, strings in single or double
quotes (double-quoted text is a string in StreamSQL, not a name), backquoted names,
``--`` and ``/* */`` comments and the shell's backslash commands. Unterminated strings
and comments are highlighted as such up to the end of the input. Its tokens are those of
the splitter and the completer (StreamSQL's one tokenizer, :mod:`streamjob.grammar.lexical`).
"""

from __future__ import annotations

from pygments.lexer import Lexer
from pygments.token import (Comment, Keyword, Name, Number, Operator, Punctuation, String,
                            Text, Whitespace)

from ..grammar import lexical
from ..client.splitter import tokenize

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


_OPERATORS = frozenset("<>=!+-*/%|")
_PUNCTUATION = frozenset(";:(),.[]")
_KEYWORD_SET = frozenset(KEYWORDS)
_TYPE_SET = frozenset(TYPES)


def _token_type(token):
    """The pygments token type of one :class:`~streamjob.grammar.lexical.SqlToken`."""
    kind, text = token.kind, token.text
    if kind == "ws":
        return Whitespace
    if kind in ("comment", "open_comment"):
        return Comment.Single if text.startswith("--") else Comment.Multiline
    if kind in ("string", "open_string"):
        return String.Single if text.startswith("'") else String.Double
    if kind in ("name", "open_name"):
        return Name.Variable
    if kind == "number":
        return Number
    if kind == "word":
        upper = text.upper()
        return Keyword if upper in _KEYWORD_SET else (
            Name.Builtin if text.lower() in _TYPE_SET else Name)
    if text in _OPERATORS:
        return Operator
    return Punctuation if text in _PUNCTUATION else Text


class StreamSqlLexer(Lexer):
    """A pygments lexer for StreamSQL as typed into the shell (see the module docstring):
    the splitter's tokens (:func:`streamjob.client.splitter.tokenize`, StreamSQL's one
    tokenizer), typed by kind and by the grammar's vocabulary."""

    name = "StreamSQL"
    aliases = ["streamsql"]

    def get_tokens_unprocessed(self, text):
        """``(offset, token type, text)`` for every token of ``text``; a meta command's
        ``\\name`` is ``Keyword.Pseudo``, its argument is lexed as StreamSQL."""
        for token in tokenize(text):
            if token.kind != "meta":
                yield token.start, _token_type(token), token.text
                continue
            command = token.text.split(None, 1)[0] if token.text.strip() else token.text
            yield token.start, Keyword.Pseudo, command
            rest = token.text[len(command):]
            for inner in lexical.tokenize(rest):
                yield token.start + len(command) + inner.start, _token_type(inner), inner.text
