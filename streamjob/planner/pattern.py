"""Slipstream 5.1's ``PATTERN (...) WITHIN (...)`` read from a job's query text.

Form (keywords in any case)::

    FROM PATTERN ( e1=s[<condition>] [quantifier]
                   { NEXT | NOTNEXT | FOLLOWEDBY | NOTFOLLOWEDBY } e2=s[<condition>] [quantifier]
                   ... ) WITHIN ('10' MINUTE)

A variable is ``name=stream[condition]``; the quantifier, after the condition, is
``[TIMES(n)]`` (n >= 1) or ``[ONEORMORE]``. WITHIN takes a whole number and a unit
(MILLISECOND, SECOND, MINUTE, HOUR, DAY; plural allowed), quoted as Slipstream writes it
(``'10' minute``) or not. WITHIN is required here: without it partial matches would be
kept for ever.

As STREAMWINDOW is (:mod:`streamjob.planner.window`), the clause is cut out of the text
before sqlglot reads the query: it is replaced by :data:`PLACEHOLDER` and spaces of the
same length (newlines kept), so every other position stays true. Each condition is parsed
by sqlglot from a copy of the text in which everything else is blanked, so its nodes'
offsets are offsets into the query as written.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp
from sqlglot.tokens import Token, TokenType

from .. import policy
from .text import QueryText, Span, TokenCursor, tokenize

#: The table name the pattern clause is replaced by in the query text.
PLACEHOLDER = "sjcep"
#: The operators between variables, as written, -> the matcher's link names.
LINKS = {"NEXT": "next", "NOTNEXT": "notnext", "FOLLOWEDBY": "followedby",
         "NOTFOLLOWEDBY": "notfollowedby"}
UNITS = {"MILLISECOND": 1, "SECOND": 1000, "MINUTE": 60_000, "HOUR": 3_600_000,
         "DAY": 86_400_000}
FORM = ("PATTERN (e1=s[<condition>] FOLLOWEDBY e2=s[<condition>][TIMES(2)]) "
        "WITHIN ('10' MINUTE)")


@dataclass(frozen=True)
class VariableClause:
    """One ``name=stream[condition][quantifier]``: ``link`` is how it follows the one
    before (``start`` for the first), ``stream`` ``(database or None, name)``,
    ``condition`` the sqlglot tree, ``min``/``max`` the events it takes (ONEORMORE: max
    None), ``span`` where its name stands."""

    name: str
    stream: tuple[str | None, str]
    condition: exp.Expr
    link: str
    min: int
    max: int | None
    span: Span
    stream_span: Span


@dataclass(frozen=True)
class PatternClause:
    """The clause: its variables in order, WITHIN in milliseconds (and as written),
    where PATTERN stands."""

    variables: tuple[VariableClause, ...]
    within_ms: int
    within_text: str
    keyword: Span


def extract_pattern(qt: QueryText, text: str) -> tuple[str, PatternClause | None]:
    """Cut the PATTERN clause out of ``text`` (the query, maybe already rewritten with
    same-length blanks).

    Returns:
        ``(text, clause)``: the text with the clause replaced by :data:`PLACEHOLDER` and
        spaces, and the clause; ``(text, None)`` when there is none.

    Raises:
        ValidationError: a malformed clause (saying what was expected and giving the
            form), a bad quantifier, WITHIN missing or not a positive whole number with a
            known unit, more than one PATTERN, each at its line and column.
    """
    tokens = tokenize(text) or []
    found = [i for i, t in enumerate(tokens[:-1]) if t.text.upper() == "PATTERN"
             and tokens[i + 1].token_type == TokenType.L_PAREN]
    if not found:
        return text, None
    if len(found) > 1:
        raise qt.error("a query reads one PATTERN", qt.token_span(tokens[found[1]]))
    reader = _Reader(qt, text, tokens, found[0])
    clause = reader.read()
    start, end = tokens[found[0]].start, reader.last.end
    blank = "".join(c if c == "\n" else " " for c in text[start:end + 1])
    blank = PLACEHOLDER + blank[len(PLACEHOLDER):]
    return text[:start] + blank + text[end + 1:], clause


class _Reader(TokenCursor):
    def __init__(self, qt: QueryText, text: str, tokens: list[Token], at: int):
        super().__init__(qt, tokens, at, "PATTERN", FORM)
        self.text = text

    def word(self, w: str):
        return lambda t: t.text.upper() == w

    def read(self) -> PatternClause:
        keyword = self.expect("PATTERN", self.word("PATTERN"))
        self.expect("'('", lambda t: t.token_type == TokenType.L_PAREN)
        variables = [self.variable("start")]
        while True:
            tok = self.peek()
            if tok is not None and tok.text.upper() in LINKS:
                self.pos += 1
                self.last = tok
                variables.append(self.variable(LINKS[tok.text.upper()]))
                continue
            self.expect("NEXT, NOTNEXT, FOLLOWEDBY, NOTFOLLOWEDBY or ')'",
                        lambda t: t.token_type == TokenType.R_PAREN)
            break
        within_tok = self.peek()
        if within_tok is None or within_tok.text.upper() != "WITHIN":
            span = self.qt.token_span(within_tok or self.last)
            raise self.qt.error("PATTERN needs WITHIN (e.g. WITHIN ('10' MINUTE)): it bounds "
                                "how long a partial match is kept", span)
        within_ms, within_text = self.within()
        return PatternClause(tuple(variables), within_ms, within_text, self.qt.token_span(keyword))

    def variable(self, link: str) -> VariableClause:
        names = (TokenType.VAR, TokenType.IDENTIFIER)
        name = self.expect("a pattern variable (e1=stream[condition])",
                           lambda t: t.token_type in names or t.text.isidentifier())
        self.expect("'=' after the variable", lambda t: t.token_type == TokenType.EQ)
        first = self.expect("a stream name", lambda t: t.token_type in names
                            or t.text.isidentifier())
        stream: tuple[str | None, str] = (None, first.text)
        last = first
        if self.peek() is not None and self.peek().token_type == TokenType.DOT:
            self.pos += 1
            last = self.expect("a stream name", lambda t: t.token_type in names
                               or t.text.isidentifier())
            stream = (first.text, last.text)
        open_ = self.expect("'[' and the variable's condition",
                            lambda t: t.token_type == TokenType.L_BRACKET)
        close = self.bracket_end()
        condition = self.condition(open_, close, name.text)
        low, high = 1, 1
        tok = self.peek()
        if tok is not None and tok.token_type == TokenType.L_BRACKET:
            low, high = self.quantifier()
        return VariableClause(name.text.lower(), (stream[0] and stream[0].lower(), stream[1].lower()),
                              condition, link, low, high, self.qt.token_span(name),
                              self.qt.span(first.start, last.end))

    def bracket_end(self) -> Token:
        depth = 1
        while True:
            tok = self.expect("']' closing the condition", lambda t: True)
            if tok.token_type == TokenType.L_BRACKET:
                depth += 1
            elif tok.token_type == TokenType.R_BRACKET:
                depth -= 1
                if depth == 0:
                    return tok

    def condition(self, open_: Token, close: Token, var: str) -> exp.Expr:
        if close.start == open_.end + 1 or not self.text[open_.end + 1:close.start].strip():
            raise self.qt.error(f"pattern variable {var} has an empty condition",
                                self.qt.token_span(open_))
        masked = "".join(c if c == "\n" else " " for c in self.text[:open_.end + 1])
        masked += self.text[open_.end + 1:close.start]
        # read through the SQL policy as every query text is (nesting, functions, nodes)
        return policy.parse_expression(self.qt, masked, f"condition of pattern variable {var}")

    def quantifier(self) -> tuple[int, int | None]:
        self.expect("'['", lambda t: t.token_type == TokenType.L_BRACKET)
        tok = self.expect("TIMES(n) or ONEORMORE", lambda t: t.text.upper() in ("TIMES", "ONEORMORE"))
        if tok.text.upper() == "ONEORMORE":
            self.expect("']'", lambda t: t.token_type == TokenType.R_BRACKET)
            return 1, None
        self.expect("'(' after TIMES", lambda t: t.token_type == TokenType.L_PAREN)
        num = self.expect("the number of times", lambda t: t.token_type in (TokenType.NUMBER,
                                                                           TokenType.STRING))
        n = int(num.text) if num.text.strip().isdigit() else 0
        if n < 1:
            raise self.qt.error(f"TIMES takes a whole number of at least 1, not '{num.text}'",
                                self.qt.token_span(num))
        self.expect("')'", lambda t: t.token_type == TokenType.R_PAREN)
        self.expect("']'", lambda t: t.token_type == TokenType.R_BRACKET)
        return n, n

    def within(self) -> tuple[int, str]:
        start = self.expect("WITHIN", self.word("WITHIN"))
        self.expect("'(' after WITHIN", lambda t: t.token_type == TokenType.L_PAREN)
        value = self.expect("a duration, e.g. '10' MINUTE",
                            lambda t: t.token_type in (TokenType.NUMBER, TokenType.STRING))
        parts = value.text.split()
        if len(parts) == 2 and value.token_type == TokenType.STRING:  # '10 minute'
            amount, unit, unit_tok = parts[0], parts[1], value
        else:
            unit_tok = self.expect("a time unit (MILLISECOND, SECOND, MINUTE, HOUR or DAY)",
                                   lambda t: t.token_type != TokenType.R_PAREN)
            amount, unit = value.text.strip(), unit_tok.text
        if not amount.isdigit() or int(amount) < 1:
            raise self.qt.error(f"WITHIN must be a positive whole number, not '{amount}'",
                                self.qt.token_span(value))
        key = unit.upper()
        key = key[:-1] if key.endswith("S") and key[:-1] in UNITS else key
        if key not in UNITS:
            raise self.qt.error(f"unknown time unit '{unit}' in WITHIN; use MILLISECOND, "
                                f"SECOND, MINUTE, HOUR or DAY", self.qt.token_span(unit_tok))
        end = self.expect("')'", lambda t: t.token_type == TokenType.R_PAREN)
        return int(amount) * UNITS[key], self.text[start.start:end.end + 1]

