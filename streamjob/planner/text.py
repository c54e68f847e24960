"""Query text -> sqlglot tree, and positions in that text -> positions in the script.

A query (a job's ``insert into ... select ...`` or a derived stream's ``select ...``) is a
piece of a script: ``position`` is where its first character stands in the script. Every
rewrite done on the text before sqlglot reads it keeps the length of what it replaces,
so the offsets sqlglot records on the nodes (``meta`` start/end of identifiers, function
names and literals) are offsets into the text as the user wrote it, and an error can point
at the true line and column. (An escape inside the script's string literal, such as
``\"``, is one character longer in the script than in the query: positions after one on
the same line are off by that much.)
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError as SqlglotParseError
from sqlglot.errors import TokenError
from sqlglot.tokens import Token, Tokenizer, TokenType

from ..exceptions import ValidationError
from ..grammar.errors import suggest, unexpected, unexpected_end
from ..grammar.lexical import QUERY_KEYWORDS
from ..grammar.statements import Position

#: Spark's ``window(...)`` function is read by sqlglot as the WINDOW keyword; calls are
#: renamed to this placeholder of the same length before parsing, and back after.
WINDOW_PLACEHOLDER = "_sjwin"

#: Tokens that can end an operand (a column, a literal, a call, ``*``): a bare name right
#: after one is read by sqlglot as the operand's alias.
_OPERAND_END = {
    TokenType.VAR, TokenType.IDENTIFIER, TokenType.NUMBER, TokenType.STRING,
    TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.STAR, TokenType.NULL,
    TokenType.TRUE, TokenType.FALSE,
}


@dataclass(frozen=True)
class Span:
    """A place in the script: 1-based ``line`` and ``column``, and the ``text`` there as
    written (None when unknown)."""

    line: int | None
    column: int | None
    text: str | None = None


class QueryText:
    """The text of one query and where it starts in the script.

    Args:
        text: the query as written.
        position: the script position of its first character (None: report positions
            relative to the query itself).
        functions: the user functions the query may call (lower-case name ->
            :class:`~streamjob.catalog.records.FunctionInfo`, those of its database),
            which the SQL policy admits beside Spark's allowed built-ins.
    """

    def __init__(self, text: str, position: Position | None, functions=None) -> None:
        self.text = text
        self.position = position
        self.functions = dict(functions or {})

    def pos(self, offset: int) -> tuple[int | None, int | None]:
        """Script ``(line, column)`` of a 0-based offset into the query."""
        offset = max(0, min(offset, len(self.text)))
        before = self.text[:offset]
        qline = before.count("\n") + 1
        qcol = offset - (before.rfind("\n") + 1) + 1
        return script_pos(self.position, qline, qcol)

    def span(self, start: int, end: int) -> Span:
        """The span of the query's characters ``start..end`` (inclusive)."""
        line, col = self.pos(start)
        return Span(line, col, self.text[start:end + 1] or None)

    def token_span(self, token: Token) -> Span:
        """The span of one token."""
        return self.span(token.start, token.end)

    def node_span(self, node: exp.Expr | None) -> Span | None:
        """The span a parsed node covers (from the offsets sqlglot kept on it and its
        descendants), or None when sqlglot kept none."""
        if node is None:
            return None
        starts, ends = [], []
        for n in node.walk():
            meta = getattr(n, "_meta", None)  # read without creating an empty meta
            if meta and "start" in meta:
                starts.append(meta["start"])
                ends.append(meta["end"])
        if not starts:
            return None
        start, end = min(starts), max(ends)
        end = max(end, start)
        depth = self.text[start:end + 1].count("(") - self.text[start:end + 1].count(")")
        while depth > 0 and end + 1 < len(self.text):  # close a call's parentheses
            end += 1
            depth += {"(": 1, ")": -1}.get(self.text[end], 0)
        return self.span(start, end)

    def start(self) -> Span:
        """The span of the query's first character."""
        line, col = script_pos(self.position, None, None)
        if line is None:
            line, col = 1, 1
        return Span(line, col, None)

    def error(self, message: str, span: Span | None = None) -> ValidationError:
        """A ValidationError at ``span`` (the query's start when None)."""
        span = span or self.start()
        return ValidationError(message, line=span.line, column=span.column, text=span.text)


def script_pos(position: Position | None, line: int | None, col: int | None):
    """Map a 1-based (line, col) inside the query to the script."""
    if line is None:
        return (position.line, position.column) if position else (None, None)
    if position is None:
        return line, col
    if line == 1:
        return position.line, position.column + (col or 1) - 1
    return position.line + line - 1, col


def tokenize(text: str) -> list[Token] | None:
    """The query's tokens (Hive dialect), or None when it cannot be tokenized (the
    parser then reports the error properly)."""
    try:
        return Tokenizer(dialect="hive").tokenize(text)
    except (TokenError, Exception):  # noqa: BLE001
        return None


def parse(qt: QueryText, text: str, what: str) -> list[exp.Expr]:
    """Parse ``text`` (the query with same-length rewrites) into statements, through the
    SQL policy (:mod:`streamjob.policy`: its text before parsing, its tree after).

    Spark's ``window(...)`` calls come back as ``Anonymous`` nodes named ``window``.

    Raises:
        ValidationError: a syntax error, or what the policy refuses, at its line and
            column in the script.
    """
    from .. import policy

    checked_tokens = policy.check_text(qt, text, what)  # the SQL policy, step 1
    text = _rename_window_calls(text)
    dialect = Dialect.get_or_raise("hive")  # as sqlglot.parse(text, read="hive")
    tokens: list[Token] = []
    parser = None
    try:
        tokens = dialect.tokenize(text)
        parser = dialect.parser()
        statements = parser.parse(tokens, text)
    except SqlglotParseError as exc:
        # the token sqlglot stood on (falsy past the end of a statement)
        current = getattr(parser, "_curr", None) if parser is not None else None
        raise syntax_error(qt, text, tokens, exc, current, what) from None
    except TokenError as exc:
        line, col = script_pos(qt.position, 1, 1)
        raise ValidationError(f"syntax error in the {what}: {exc}", line=line, column=col) from None
    except RecursionError:
        raise too_deep(qt, what) from None
    statements = [s for s in statements if s is not None]
    for s in statements:
        for node in list(s.find_all(exp.Anonymous)):
            if node.name.lower() == WINDOW_PLACEHOLDER:
                node.set("this", exp.to_identifier("window", quoted=True))
    policy.check_tree(qt, statements, what, checked_tokens)  # the SQL policy, step 2
    return statements


def syntax_error(qt: QueryText, text: str, tokens: list[Token], exc: SqlglotParseError,
                 current: Token | None, what: str) -> ValidationError:
    """The ValidationError for sqlglot's syntax error ``exc`` in ``text`` (``tokens``):
    worded as the statements' errors (:func:`streamjob.grammar.errors.unexpected`),
    ``unexpected 'FORM' in the job's query (did you mean FROM?)``, at the offending
    token's line and column in the script, its text as written, and a did-you-mean over
    :data:`QUERY_KEYWORDS`.

    Which token offends: sqlglot reports the token it stood on (``current``; matched
    here by its line and column) or the one before, which is often not the culprit, so:

    * a bare name close to a keyword (not a keyword itself) right before the reported
      token, where sqlglot took it as an alias (it follows an operand: a name, literal,
      ``)`` or ``*``), is the offender: in ``select id FORM s`` sqlglot reads ``id FORM``
      as ``id AS FORM`` and stops at ``s``; in ``from s whre id`` it stops at ``id``;
      ``FORM`` and ``whre`` are reported;
    * else the token sqlglot stood on, when it is a bare name close to a keyword and not
      the reported one (``then 2 edn from s``: reported at ``2``, ``edn`` offends);
    * else a statement that starts with a bare name close to a keyword has that name
      reported (``SELEC id FROM s`` is read as ``SELEC AS id`` and stops at ``FROM``);
    * else the reported token, with a did-you-mean when it is itself close to a keyword
      (``insert into t SELEC id``, ``... oder by id``);
    * when sqlglot ran past the end of the statement (``current`` is falsy, as in
      ``where (id > 1``) the error is ``unexpected end of the job's query, expected ')'``,
      just after the statement's last token.

    sqlglot's ``Expecting X`` / ``Expected X`` descriptions become ``expected X``; its
    other descriptions (but the generic ``Invalid expression / Unexpected token`` and
    ``Required keyword ...``) are kept in parentheses.
    """
    err = exc.errors[0] if exc.errors else {}
    description = (err.get("description") or str(exc)).strip()
    expected, detail = _expected(description)
    where = f" in the {what}"
    index = next((i for i, t in enumerate(tokens)
                  if t.line == err.get("line") and t.col == err.get("col")), None)
    if index is None:  # not one of our tokens: sqlglot's own line and column
        highlight = (err.get("highlight") or "").replace(WINDOW_PLACEHOLDER, "window")
        col = err.get("col")
        if col is not None and highlight and "\n" not in highlight and col >= len(highlight):
            col = col - len(highlight) + 1  # sqlglot gives the token's last column
        line, col = script_pos(qt.position, err.get("line"), col)
        message = (unexpected(highlight, expected, QUERY_KEYWORDS, where) if highlight
                   else unexpected_end(f"the {what}", expected))
        return ValidationError(message + detail, line=line, column=col, text=highlight or None)
    if not current and index == _statement_end(tokens, index):
        line, col = qt.pos(tokens[index].end + 1)
        return ValidationError(unexpected_end(f"the {what}", expected) + detail,
                               line=line, column=col, text="")
    offender = _offender(tokens, index, current)
    if offender != index:
        expected, detail = [], ""  # sqlglot's expectations were about the next token
    token = tokens[offender]
    word = _written(qt, text, token)
    span = qt.span(token.start, token.end)
    return ValidationError(unexpected(word, expected, QUERY_KEYWORDS, where) + detail,
                           line=span.line, column=span.column, text=word)


def _expected(description: str) -> tuple[list[str], str]:
    """sqlglot's error description -> (what was expected, a detail to append)."""
    if description.startswith(("Expecting ", "Expected ")):
        what = description.split(" ", 1)[1].strip()
        if what and not any(c.isalnum() for c in what):
            what = f"'{what}'"
        return [what], ""
    if description == "Invalid expression / Unexpected token" \
            or description.startswith("Required keyword"):
        return [], ""
    return [], f" ({description})"


def _statement_end(tokens: list[Token], index: int) -> int:
    """The index of the last token of the statement holding ``tokens[index]``."""
    end = index
    while end + 1 < len(tokens) and tokens[end + 1].token_type != TokenType.SEMICOLON:
        end += 1
    return end


def _offender(tokens: list[Token], index: int, current: Token | None) -> int:
    """The index of the token to report for sqlglot's error at ``tokens[index]``, sqlglot
    standing on ``current`` (the rules are :func:`syntax_error`'s)."""
    def misspelt(i: int) -> bool:
        t = tokens[i]
        return t.token_type == TokenType.VAR and suggest(t.text, QUERY_KEYWORDS) is not None

    if index >= 2 and misspelt(index - 1) and tokens[index - 2].token_type in _OPERAND_END:
        return index - 1
    if current:
        at = next((i for i, t in enumerate(tokens) if t.start == current.start), None)
        if at is not None and at != index and misspelt(at):
            return at
    first = index
    while first > 0 and tokens[first - 1].token_type != TokenType.SEMICOLON:
        first -= 1
    if first < index and misspelt(first):
        return first
    return index


def _written(qt: QueryText, text: str, token: Token) -> str:
    """A token's text as the user wrote it (``text`` may hold same-length rewrites)."""
    source = qt.text if len(qt.text) == len(text) else text
    return source[token.start:token.end + 1].replace(WINDOW_PLACEHOLDER, "window")


def too_deep(qt: QueryText, what: str) -> ValidationError:
    """The error for a query whose expressions nest too deeply for the planner (Python's
    recursion limit), at the query's first character (docs/reliability.md: limits)."""
    line, col = script_pos(qt.position, 1, 1)
    return ValidationError(
        f"the {what} nests its expressions too deeply to plan; split it (e.g. into a derived "
        "stream) or flatten long chains of operators",
        line=line, column=col,
    )


def is_window_call(node: exp.Expr) -> bool:
    """True for Spark's ``window(...)`` / ``session_window(...)`` time-window functions."""
    return isinstance(node, exp.Anonymous) and node.name.lower() in ("window", "session_window")


def _rename_window_calls(text: str) -> str:
    """Rename ``window(`` calls to the same-length placeholder (positions stay true)."""
    tokens = tokenize(text)
    if not tokens:
        return text
    for t, nxt in zip(tokens, tokens[1:]):
        if t.token_type == TokenType.WINDOW and nxt.token_type == TokenType.L_PAREN \
                and t.end - t.start + 1 == len(WINDOW_PLACEHOLDER):
            text = text[:t.start] + WINDOW_PLACEHOLDER + text[t.end + 1:]
    return text


class TokenCursor:
    """Reads a hand-written clause (STREAMWINDOW, SESSIONWINDOW, predicate sessions,
    CEP's PATTERN) token by token from ``tokens`` (sqlglot's tokens of the query ``qt``),
    starting at index ``pos``.

    ``expect(what, ok)`` takes the next token when ``ok(token)`` holds (it becomes
    ``last``), else raises a :class:`~streamjob.exceptions.ValidationError` at that token
    (or at the token before, at the end of the query): ``malformed <label>: expected
    <what> but found '<text>'; the form is <form>``. ``peek()`` is the next token or
    None; readers may move ``pos`` themselves (e.g. past a bracketed condition)."""

    def __init__(self, qt: QueryText, tokens: list[Token], pos: int, label: str,
                 form: str) -> None:
        self.qt, self.tokens, self.pos = qt, tokens, pos
        self.label, self.form = label, form
        self.last = tokens[pos] if pos < len(tokens) else tokens[-1]

    def peek(self) -> Token | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def expect(self, what: str, ok) -> Token:
        tok = self.peek()
        if tok is None or not ok(tok):
            found = f"'{tok.text}'" if tok is not None else "the end of the query"
            at = tok if tok is not None else self.tokens[self.pos - 1]
            raise self.qt.error(f"malformed {self.label}: expected {what} but found {found}; "
                                f"the form is {self.form}", self.qt.token_span(at))
        self.pos += 1
        self.last = tok
        return tok
