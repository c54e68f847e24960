"""Slipstream's STREAMWINDOW clause, turned into Spark's ``window(...)`` grouping, and
SESSIONWINDOW's gap form, turned into Spark's ``session_window(...)`` grouping.

``... FROM s [[AS] alias] STREAMWINDOW w AS (LENGTH '10' SECOND [SLIDE '5' SECOND]) ...``
(keywords in any case; values quoted or bare whole numbers; units MILLISECOND(S),
SECOND(S), MINUTE(S), HOUR(S), DAY(S)) declares a tumbling window (no SLIDE) or a
sliding one over the stream it follows. Before sqlglot reads the query, the clause is
replaced by spaces of the same length (newlines kept), so every other position stays
true; after parsing, ``window(<time column>, '<length>'[, '<slide>'])`` is added to the
GROUP BY of the select that reads the stream (a GROUP BY is created when the select
aggregates without one).

The time column is the stream's event time (``"watermark.column"``, with the watermark
``"watermark.delay"`` applied at the source). A stream without event time is windowed
on processing time: its view gets a column :data:`PROCTIME_COLUMN` =
``current_timestamp()`` (the micro-batch's time) with a zero-delay watermark, so the
windowed aggregation appends each window once the next batch has passed its end.

``... FROM s [[AS] alias] SESSIONWINDOW w AS (GAP '30' SECOND) ...`` declares gap-based
sessions (Spark's ``session_window(<time column>, '<gap>')``, Flink's session window,
ksqlDB's ``WINDOW SESSION``): per group, events closer than the gap form one session
``[first event, last event + gap)``; its row is appended once, when the watermark passes
that end. Slipstream 5.1 documents SESSIONWINDOW only in its predicate form
(``SESSIONWINDOW(INIT[...] END[... EXCLUDE] KEYEDBY(...))``); no gap option of it is
published, so the GAP form is streamjob's, shaped like STREAMWINDOW's. The predicate
form is read by :mod:`.sessions` (clause kind ``"predicate"``): its GROUP BY gets the
sessionized stream's ``session_window`` struct and close time (:func:`add_window_group`).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp
from sqlglot.tokens import Token, TokenType

from .sessions import (CLOSE_COLUMN, STRUCT, PredicateClause, PredicateSpec, is_predicate_form,
                       read_predicate_clause)
from .text import QueryText, Span, TokenCursor, is_window_call, tokenize

#: The processing-time column added to the view of a stream windowed without event time.
PROCTIME_COLUMN = "__proctime"

#: The type of the ``window`` struct Spark's ``window(...)`` grouping produces.
WINDOW_TYPE = "struct<start:timestamp,end:timestamp>"

_UNITS = {
    "MILLISECOND": ("millisecond", 1),
    "SECOND": ("second", 1000),
    "MINUTE": ("minute", 60_000),
    "HOUR": ("hour", 3_600_000),
    "DAY": ("day", 86_400_000),
}
_FORMS = {"STREAMWINDOW": "STREAMWINDOW w AS (LENGTH '10' SECOND [SLIDE '5' SECOND])",
          "SESSIONWINDOW": "SESSIONWINDOW w AS (GAP '30' SECOND)"}


@dataclass(frozen=True)
class Duration:
    """A window length or slide: ``amount`` of ``unit`` (singular, lower case)."""

    amount: int
    unit: str
    millis: int

    @property
    def spark(self) -> str:
        """Spark's interval text, e.g. ``'10 seconds'``."""
        return f"{self.amount} {self.unit}{'' if self.amount == 1 else 's'}"


@dataclass(frozen=True)
class WindowClause:
    """One STREAMWINDOW or SESSIONWINDOW clause as read from the text (before sqlglot
    parses the query).

    ``keyword`` is the span of the STREAMWINDOW/SESSIONWINDOW keyword; ``follows`` the
    end offset of the token before it (the stream's name or alias), -1 if none. ``kind``
    is ``"stream"`` (``length``/``slide``), ``"session"`` (``length`` is the GAP) or
    ``"predicate"`` (Slipstream's predicate sessions: ``predicate`` holds the parts,
    ``length`` is unused)."""

    name: str
    length: Duration | None
    slide: Duration | None
    keyword: Span
    follows: int
    kind: str = "stream"
    predicate: PredicateClause | None = None

    @property
    def word(self) -> str:
        """The clause's keyword: ``STREAMWINDOW`` or ``SESSIONWINDOW``."""
        return "STREAMWINDOW" if self.kind == "stream" else "SESSIONWINDOW"


@dataclass(frozen=True)
class StreamWindow:
    """A STREAMWINDOW (``kind`` ``"stream"``) or SESSIONWINDOW (``"session"``; ``length``
    is then the gap) applied to a stream of the query.

    ``database``/``stream`` name the stream, ``view`` its temporary view, ``alias`` the
    name the query reads it by; ``time_column`` is its event-time column, or
    :data:`PROCTIME_COLUMN` when ``proctime`` (the view must then add that column, see
    :func:`streamjob.spark.query.stream_frame`); ``length``/``slide`` are Spark interval
    texts (``slide`` None: tumbling). A predicate session (``kind`` ``"predicate"``)
    has ``predicate`` (its resolved parts) and an empty ``length``."""

    name: str
    database: str
    stream: str
    view: str
    alias: str
    time_column: str
    proctime: bool
    length: str
    slide: str | None
    kind: str = "stream"
    predicate: PredicateSpec | None = None

    @property
    def function(self) -> str:
        """Spark's grouping function: ``window`` or ``session_window`` (also the name of
        the struct column it adds)."""
        return "window" if self.kind == "stream" else "session_window"


def extract_windows(qt: QueryText) -> tuple[str, list[WindowClause]]:
    """Blank every STREAMWINDOW / SESSIONWINDOW clause out of the query text.

    Returns:
        ``(text, clauses)``: the text with each clause replaced by spaces of equal
        length (newlines kept), and the clauses read.

    Raises:
        ValidationError: a malformed clause (saying what is expected), an unknown time
            unit, a length, slide or gap that is not a positive whole number, a SLIDE
            longer than the LENGTH, more than one window clause, or SESSIONWINDOW's
            predicate form's errors (:func:`.sessions.read_predicate_clause`), each at
            its token.
    """
    tokens = tokenize(qt.text)
    if not tokens:
        return qt.text, []
    text = qt.text
    clauses: list[WindowClause] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        word = tok.text.upper()
        if tok.token_type == TokenType.VAR and word in _FORMS:
            if clauses:
                first = clauses[0].word
                raise qt.error(f"only one {word} per query is supported" if first == word
                               else f"a query has one window clause, and this one already has "
                                    f"a {first}", qt.token_span(tok))
            if word == "SESSIONWINDOW" and is_predicate_form(tokens, i):
                clause, last = _read_predicate(qt, tokens, i)
            else:
                clause, last = _read_clause(qt, tokens, i)
            clauses.append(clause)
            blank = "".join(c if c == "\n" else " " for c in text[tok.start:last.end + 1])
            text = text[:tok.start] + blank + text[last.end + 1:]
            i = tokens.index(last) + 1
            continue
        i += 1
    return text, clauses


def _read_predicate(qt: QueryText, tokens: list[Token], i: int) -> tuple[WindowClause, Token]:
    def duration(expect, peek):
        return _duration(qt, expect, peek, "TIMEOUT", "SESSIONWINDOW")

    name, pc, last = read_predicate_clause(qt, tokens, i, duration)
    follows = tokens[i - 1] if i > 0 else None
    is_name = follows is not None and follows.token_type in (TokenType.VAR, TokenType.IDENTIFIER)
    return WindowClause(name, None, None, qt.token_span(tokens[i]),
                        follows.end if is_name else -1, "predicate", pc), last


def _read_clause(qt: QueryText, tokens: list[Token], i: int) -> tuple[WindowClause, Token]:
    keyword = tokens[i]
    kw = keyword.text.upper()
    cursor = TokenCursor(qt, tokens, i + 1, f"{kw} clause", _FORMS[kw])
    peek, expect = cursor.peek, cursor.expect

    def word(w: str):
        return lambda t: t.text.upper() == w

    name = expect("a window name", lambda t: t.token_type in (TokenType.VAR, TokenType.IDENTIFIER))
    expect("AS", word("AS"))
    expect("'('", lambda t: t.token_type == TokenType.L_PAREN)
    follows = tokens[i - 1] if i > 0 else None
    is_name = follows is not None and follows.token_type in (TokenType.VAR, TokenType.IDENTIFIER)
    if kw == "SESSIONWINDOW":
        expect("GAP", word("GAP"))
        gap = _duration(qt, expect, peek, "GAP", kw)
        last = expect("')'", lambda t: t.token_type == TokenType.R_PAREN)
        return WindowClause(name.text, gap, None, qt.token_span(keyword),
                            follows.end if is_name else -1, "session"), last
    expect("LENGTH", word("LENGTH"))
    length = _duration(qt, expect, peek, "LENGTH")
    slide = None
    if peek() is not None and peek().text.upper() == "SLIDE":
        expect("SLIDE", word("SLIDE"))
        slide_tok = peek()
        slide = _duration(qt, expect, peek, "SLIDE")
        if slide.millis > length.millis:
            raise qt.error(
                f"STREAMWINDOW SLIDE ({slide.spark}) is longer than its LENGTH ({length.spark}); "
                f"the slide must not exceed the length", qt.token_span(slide_tok))
    last = expect("')'" if slide else "SLIDE or ')'",
                  lambda t: t.token_type == TokenType.R_PAREN)
    return WindowClause(name.text, length, slide, qt.token_span(keyword),
                        follows.end if is_name else -1), last


def _duration(qt: QueryText, expect, peek, what: str, kw: str = "STREAMWINDOW") -> Duration:
    first = peek()
    negative = first is not None and first.token_type == TokenType.DASH
    if negative:
        expect("a number", lambda t: True)
    value = expect(f"the {what} as a number, e.g. '10'",
                   lambda t: t.token_type in (TokenType.STRING, TokenType.NUMBER))
    span = qt.span(first.start, value.end)
    raw = value.text.strip()
    try:
        amount = int(raw) * (-1 if negative else 1)
    except ValueError:
        amount = None
    if amount is None or amount <= 0:
        shown = ("-" if negative else "") + raw
        raise qt.error(f"{kw} {what} must be a positive whole number, not '{shown}'", span)
    unit_tok = expect("a time unit (MILLISECOND, SECOND, MINUTE, HOUR or DAY)",
                      lambda t: t.token_type != TokenType.R_PAREN)
    unit = unit_tok.text.upper()
    unit = unit[:-1] if unit.endswith("S") and unit[:-1] in _UNITS else unit
    if unit not in _UNITS:
        raise qt.error(f"unknown time unit '{unit_tok.text}' in {kw}; use MILLISECOND, "
                       f"SECOND, MINUTE, HOUR or DAY", qt.token_span(unit_tok))
    singular, millis = _UNITS[unit]
    return Duration(amount, singular, amount * millis)


def window_table(clause: WindowClause, tree: exp.Expr) -> exp.Table | None:
    """The FROM/JOIN table the clause follows (matched by the name or alias token just
    before STREAMWINDOW), or None."""
    if clause.follows < 0:
        return None
    for table in tree.find_all(exp.Table):
        alias = table.args.get("alias")
        for ident in (table.this, alias.this if isinstance(alias, exp.TableAlias) else None):
            meta = getattr(ident, "_meta", None) if ident is not None else None
            if meta and meta.get("end") == clause.follows:
                return table
    return None


def aggregates(select: exp.Select) -> bool:
    """True when ``select`` itself groups or calls an aggregate function (nested queries
    and OVER windows excluded)."""
    if select.args.get("group"):
        return True
    for part in list(select.expressions) + [select.args.get("having")]:
        if part is None:
            continue
        for node in part.walk(prune=lambda n: isinstance(n, (exp.Query, exp.Subquery, exp.Window))
                              and n is not part):
            if isinstance(node, exp.AggFunc) and not isinstance(node.parent, exp.Window):
                return True
    return False


def add_window_group(select: exp.Select, alias: str, window: StreamWindow) -> None:
    """Add ``window(alias.time_column, length[, slide])`` (a STREAMWINDOW) or
    ``session_window(alias.time_column, gap)`` (a SESSIONWINDOW) to the select's GROUP BY;
    for a predicate session, the sessionized stream's ``alias.session_window`` struct and
    its close time (the event-time column the aggregation appends by)."""
    if window.kind == "predicate":
        cols = [exp.column(STRUCT, table=alias), exp.column(CLOSE_COLUMN, table=alias)]
        group = select.args.get("group")
        if group is None:
            select.set("group", exp.Group(expressions=cols))
        else:
            for c in cols:
                group.append("expressions", c)
        return
    args = [exp.column(window.time_column, table=alias),
            exp.Literal.string(window.length)]
    if window.slide:
        args.append(exp.Literal.string(window.slide))
    call = exp.Anonymous(this=exp.to_identifier(window.function, quoted=True), expressions=args)
    group = select.args.get("group")
    if group is None:
        select.set("group", exp.Group(expressions=[call]))
    else:
        group.append("expressions", call)


def groups_by_window(select: exp.Select) -> bool:
    """True when the select's GROUP BY already calls ``window(...)`` or
    ``session_window(...)``."""
    group = select.args.get("group")
    return bool(group) and any(is_window_call(n) for g in group.expressions for n in g.walk())


def groups_by_session(select: exp.Expr) -> bool:
    """True when any select in ``select`` groups by ``session_window(...)`` (Spark runs
    session window aggregations in append or complete mode only, never update)."""
    return any(is_window_call(n) and n.name.lower() == "session_window"
               for g in select.find_all(exp.Group) for n in g.walk())
