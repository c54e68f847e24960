"""Client input -> statements: where each ends, and whether the input is complete (the
shell's prompt and scripts, ``-e`` text cut at its SELECT previews, ``check --compat``).

The shell reads statements that end with ``;`` over as many lines as it takes: Enter on
an unfinished statement continues it on the next line. A ``;`` inside a quoted string,
a backquoted name or a comment does not end a statement. A line whose first character
(after blanks) is ``\\`` where a statement would start is a meta command (``\\l``,
``\\d name``): it ends at the end of its line and needs no ``;``. ``quit``, ``exit`` and
``help`` alone are complete without ``;`` too (as in psql).

Pure text functions, no prompt_toolkit, over StreamSQL's one tokenizer
(:mod:`streamjob.grammar.lexical`): :func:`tokenize`, :func:`split_input`,
:func:`is_complete`, and :func:`position_in` to turn a position inside one statement into
one inside the whole input.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..grammar.lexical import SqlToken, token_at

__all__ = ["BARE_WORDS", "Piece", "Split", "Token", "bare_word", "first_word", "is_complete",
           "position_in", "split_input", "tokenize"]

#: Words that are a complete command on their own, without ``;``.
BARE_WORDS = ("quit", "exit", "help")

#: A token of shell input: :class:`streamjob.grammar.lexical.SqlToken` (StreamSQL's one
#: tokenizer), and ``meta``, a whole backslash-command line.
Token = SqlToken


def tokenize(text: str) -> list[Token]:
    """The tokens of ``text``, in order, covering all of it (those of
    :func:`streamjob.grammar.lexical.tokenize`, but for meta commands).

    A ``\\`` where a statement would start (nothing but blanks and comments since the
    last ``;``) begins a ``meta`` token that runs to the end of its line."""
    out: list[Token] = []
    pos = 0
    boundary = True
    while pos < len(text):
        if boundary and text[pos] == "\\":
            end = text.find("\n", pos)
            end = len(text) if end < 0 else end
            out.append(Token("meta", text[pos:end], pos))
            pos = end
            continue
        tok = token_at(text, pos)
        out.append(tok)
        pos = tok.end
        if tok.kind == "punct" and tok.text == ";":
            boundary = True
        elif tok.significant:
            boundary = False
    return out


@dataclass(frozen=True)
class Piece:
    """One complete command of the input: ``kind`` ``sql`` (a statement, ``text``
    without its ``;``, starting at its first non-blank character) or ``meta`` (a
    backslash command line); ``offset`` is where ``text`` starts in the input."""

    kind: str
    text: str
    offset: int


@dataclass(frozen=True)
class Split:
    """The outcome of :func:`split_input`: the complete ``pieces``; ``rest``, the
    unfinished text after them (``""`` when there is none; from its first non-blank
    character); ``rest_offset`` where it starts; ``open`` when the input ends inside a
    string, backquoted name or comment."""

    pieces: list[Piece] = field(default_factory=list)
    rest: str = ""
    rest_offset: int = 0
    open: bool = False

    @property
    def complete(self) -> bool:
        """True when nothing is left unfinished (a bare ``quit``/``exit``/``help``
        counts as finished)."""
        if self.open:
            return False
        return not self.rest or bare_word(self.rest) is not None


def bare_word(text: str) -> str | None:
    """``quit``, ``exit`` or ``help`` when ``text`` is only that word (any case, an
    optional ``;``), else None."""
    word = text.strip().rstrip(";").strip().lower()
    return word if word in BARE_WORDS else None


def split_input(text: str) -> Split:
    """Split shell input into complete commands and an unfinished rest.

    Statements end at ``;`` outside strings, backquoted names and comments; empty
    statements (blanks and comments only) are dropped. See the module docstring for
    meta commands."""
    pieces: list[Piece] = []
    start: int | None = None  # first non-blank token of the pending statement
    significant = False
    last: Token | None = None
    for tok in tokenize(text):
        last = tok
        if tok.kind == "meta":
            pieces.append(Piece("meta", tok.text.rstrip(), tok.start))
            start, significant = None, False
            continue
        if tok.kind == "punct" and tok.text == ";":
            if significant:
                pieces.append(Piece("sql", text[start:tok.start].rstrip(), start))
            start, significant = None, False
            continue
        if tok.kind == "ws":
            continue
        if start is None:
            start = tok.start
        significant = significant or tok.significant
    open_ = last is not None and last.open
    if start is None or not (significant or open_):
        return Split(pieces, "", len(text), open_)
    return Split(pieces, text[start:], start, open_)


def first_word(text: str) -> str:
    """The first word of ``text`` after blanks and comments, lower-cased (``""`` if it
    starts otherwise)."""
    for tok in tokenize(text):
        if tok.significant:
            return tok.text.lower() if tok.kind == "word" else ""
    return ""


def is_complete(text: str) -> bool:
    """True when Enter should run ``text``: it is blank, or every statement in it is
    finished (``;``), or it ends with a meta command or a bare ``quit``/``exit``/``help``."""
    if not text.strip():
        return True
    return split_input(text).complete


def position_in(text: str, offset: int, line: int, column: int) -> tuple[int, int]:
    """The 1-based ``(line, column)`` in ``text`` of position ``(line, column)`` inside
    the piece that starts at ``offset``."""
    before = text[:offset]
    base_line = before.count("\n") + 1
    base_col = offset - (before.rfind("\n") + 1) + 1
    if line == 1:
        return base_line, base_col + column - 1
    return base_line + line - 1, column
