"""Slipstream 5.1's predicate session windows: the clause, its checks, and the meaning.

``... FROM s [[AS] alias] SESSIONWINDOW [name [AS]] (INIT[pred] END[pred [EXCLUDE]]
KEYEDBY(col, ...) [TIMEOUT 'n' unit]) ... GROUP BY ...`` (parts in any order, each
once, optionally separated by commas; ``pred`` a boolean expression over the stream's
columns, Hive dialect). The form is Slipstream 5.1's as one public article shows it
(docs/streamsql.md, [besthub]); no Slipstream manual describing its rules was found, so
the rules below are streamjob's, chosen to agree with the comparable published designs
(Timeplus' ``session(... start_condition, end_condition)`` with its include/exclude
bracket, Odysseus' predicate windows) and with Spark's ``session_window`` where a choice
touches time:

* **Per key.** Sessions are kept per value of the KEYEDBY columns; keys never share one.
* **Open.** An event satisfying INIT opens a session when the key has none open; the
  session starts at that event's time and contains it. An INIT event inside an open
  session is an ordinary event of that session (it opens nothing; the opener is never
  checked against END).
* **Belong.** Every event of the key while a session is open belongs to it.
* **Close by END.** An event satisfying END (other than the opener) closes the session
  and belongs to it, unless EXCLUDE is written; the session ends at that event's time.
* **Close by TIMEOUT** (optional): a session whose last event is older than the timeout
  closes at ``last event + timeout``; an event at exactly that time still belongs to it
  (as Spark's ``session_window`` merges an event exactly one gap after the last). Without TIMEOUT an unended session, and its events, stay in state
  until its END (EXPLAIN says so).
* **Outside.** Events while no session is open belong to no session and are not read by
  the query (like a WHERE). A NULL predicate is false.
* **Order.** Events are taken in event-time order: with the stream's event time
  (``"watermark.column"`` and ``"watermark.delay"``), an event is processed once the
  watermark has passed it (buffered until then), so out-of-order events within the
  delay are ordered, and events later than the watermark are dropped as Spark drops late
  rows. Without event time, processing time: each event is stamped with its micro-batch's
  time and processed once a later micro-batch has read data (the watermark, that time
  with no delay, is then past it); events of one key with equal times keep the order
  Spark hands them over.
* **Output.** The query groups by the session (its GROUP BY gets the session added):
  one row per session and key, written once, when the session closes (append). The
  session is read as ``session_window.start`` / ``session_window.end``, as with
  ``SESSIONWINDOW w AS (GAP ...)``.

:func:`read_predicate_clause` reads the clause from the tokens;
:class:`SessionMachine` is the meaning in plain Python (the Spark operator,
:mod:`streamjob.spark.sessions`, runs it per key in Spark's ``transformWithStateInPandas``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from sqlglot.tokens import Token, TokenType

from .text import QueryText, Span, TokenCursor

#: The words that start a part of the predicate form.
PARTS = ("INIT", "END", "KEYEDBY", "TIMEOUT")
FORM = ("SESSIONWINDOW(INIT[<condition>] END[<condition> [EXCLUDE]] KEYEDBY(<column>, ...) "
        "[TIMEOUT '30' MINUTE])")
#: Internal columns of the sessionized stream (see :mod:`streamjob.spark.sessions`).
CLOSE_COLUMN = "__sj_close"
STRUCT = "session_window"


@dataclass(frozen=True)
class Predicate:
    """One INIT/END condition as written: ``text`` (Hive SQL) and where it stands."""

    text: str
    span: Span
    start: int  # offset of the text in the query


@dataclass(frozen=True)
class PredicateClause:
    """The parts of a predicate SESSIONWINDOW as read from the text.

    ``timeout_ms`` is None without TIMEOUT; ``keys`` the KEYEDBY column names as written
    with their spans."""

    init: Predicate
    end: Predicate | None
    exclude_end: bool
    keys: tuple[tuple[str, Span], ...]
    timeout_ms: int | None
    timeout_text: str | None


@dataclass(frozen=True)
class PredicateSpec:
    """A resolved predicate session, for the plan: ``init``/``end`` are Spark SQL
    boolean expressions over the stream's columns, checked by the SQL policy
    (:class:`~streamjob.policy.CheckedSQL`; ``end`` None: closed by TIMEOUT only),
    ``keys`` the KEYEDBY columns as declared, ``timeout_ms`` or None."""

    init: str
    end: str | None
    exclude_end: bool
    keys: tuple[str, ...]
    timeout_ms: int | None
    timeout_text: str | None = None

    def describe(self) -> str:
        """One line for EXPLAIN and ``check --compat``."""
        parts = [f"INIT[{self.init}]"]
        if self.end is not None:
            parts.append(f"END[{self.end}{' EXCLUDE' if self.exclude_end else ''}]")
        parts.append(f"KEYEDBY({', '.join(self.keys)})")
        if self.timeout_text:
            parts.append(f"TIMEOUT {self.timeout_text}")
        return " ".join(parts)


def is_predicate_form(tokens: list[Token], i: int) -> bool:
    """True when the SESSIONWINDOW at ``tokens[i]`` is the predicate form: its first
    word inside the parentheses is INIT, END, KEYEDBY or TIMEOUT."""
    for tok in tokens[i + 1:i + 5]:
        if tok.token_type == TokenType.L_PAREN:
            nxt = tokens.index(tok) + 1
            return nxt < len(tokens) and tokens[nxt].text.upper() in PARTS
    return False


def read_predicate_clause(qt: QueryText, tokens: list[Token], i: int, duration
                          ) -> tuple[str, PredicateClause, Token]:
    """Read ``SESSIONWINDOW [name [AS]] ( parts )`` starting at ``tokens[i]``.

    ``duration(expect, peek)`` reads a TIMEOUT amount and unit (from :mod:`.window`).
    Returns ``(name, clause, last token)``; the name is ``session`` when none is written.

    Raises:
        ValidationError: a part written twice, missing INIT or KEYEDBY, neither END nor
            TIMEOUT, an empty condition or key list, EXCLUDE on INIT, unbalanced brackets,
            each at its token with the form.
    """
    cursor = TokenCursor(qt, tokens, i + 1, "SESSIONWINDOW clause", FORM)
    peek, expect = cursor.peek, cursor.expect
    name = "session"

    if peek() is not None and peek().token_type != TokenType.L_PAREN:
        name = expect("a window name or '('", lambda t: t.token_type in (
            TokenType.VAR, TokenType.IDENTIFIER)).text
        if peek() is not None and peek().text.upper() == "AS":
            cursor.pos += 1
    expect("'('", lambda t: t.token_type == TokenType.L_PAREN)
    seen: dict[str, Any] = {}
    while True:
        tok = expect("INIT, END, KEYEDBY, TIMEOUT or ')'",
                     lambda t: t.token_type in (TokenType.R_PAREN, TokenType.COMMA)
                     or t.text.upper() in PARTS)
        word = tok.text.upper()
        if tok.token_type == TokenType.R_PAREN:
            last = tok
            break
        if tok.token_type == TokenType.COMMA:
            continue
        if word in seen:
            raise qt.error(f"SESSIONWINDOW has {word} twice", qt.token_span(tok))
        if word in ("INIT", "END"):
            open_ = expect("'['", lambda t: t.token_type == TokenType.L_BRACKET)
            body, close = _bracket(qt, tokens, tokens.index(open_), word)
            cursor.pos = tokens.index(close) + 1
            exclude = bool(body) and body[-1].text.upper() == "EXCLUDE"
            if exclude:
                if word == "INIT":
                    raise qt.error("EXCLUDE applies to END only: the event that opens a session "
                                   "is its first event", qt.token_span(body[-1]))
                body = body[:-1]
            if not body:
                raise qt.error(f"SESSIONWINDOW {word}[...] needs a condition, e.g. "
                               f"{word}[op = 'login']", qt.token_span(open_))
            start, end = body[0].start, body[-1].end
            seen[word] = (Predicate(qt.text[start:end + 1], qt.span(start, end), start), exclude)
        elif word == "KEYEDBY":
            expect("'('", lambda t: t.token_type == TokenType.L_PAREN)
            keys = []
            while True:
                k = expect("a column name", lambda t: t.token_type in (
                    TokenType.VAR, TokenType.IDENTIFIER) or t.text.isidentifier())
                keys.append((k.text, qt.token_span(k)))
                sep = expect("',' or ')'", lambda t: t.token_type in (
                    TokenType.COMMA, TokenType.R_PAREN))
                if sep.token_type == TokenType.R_PAREN:
                    break
            seen[word] = tuple(keys)
        else:
            first = peek()
            d = duration(expect, peek)
            seen[word] = (d.millis, f"'{d.amount}' {d.unit.upper()}", first)
    keyword = qt.token_span(tokens[i])
    if "INIT" not in seen:
        raise qt.error(f"SESSIONWINDOW needs INIT[<condition>] (what opens a session); the form "
                       f"is {FORM}", keyword)
    if "KEYEDBY" not in seen:
        raise qt.error(f"SESSIONWINDOW needs KEYEDBY(<column>, ...) (whose sessions they are); "
                       f"the form is {FORM}", keyword)
    if "END" not in seen and "TIMEOUT" not in seen:
        raise qt.error("SESSIONWINDOW needs END[<condition>] or TIMEOUT 'n' unit: a session "
                       "that nothing closes would never be written", keyword)
    end = seen.get("END")
    timeout = seen.get("TIMEOUT")
    clause = PredicateClause(
        init=seen["INIT"][0], end=end[0] if end else None, exclude_end=bool(end and end[1]),
        keys=seen["KEYEDBY"], timeout_ms=timeout[0] if timeout else None,
        timeout_text=timeout[1] if timeout else None)
    return name, clause, last


def _bracket(qt: QueryText, tokens: list[Token], i: int, word: str) -> tuple[list[Token], Token]:
    """The tokens between ``tokens[i]`` (a '[') and its matching ']', and that ']'."""
    depth = 0
    for j in range(i, len(tokens)):
        t = tokens[j].token_type
        if t == TokenType.L_BRACKET:
            depth += 1
        elif t == TokenType.R_BRACKET:
            depth -= 1
            if depth == 0:
                return tokens[i + 1:j], tokens[j]
    raise qt.error(f"SESSIONWINDOW {word}[ has no closing ']'", qt.token_span(tokens[i]))


def resolve(qt: QueryText, clause: PredicateClause, columns: list[dict], names: set[str]
            ) -> PredicateSpec:
    """Check the clause against the stream's ``columns`` (``[{"name", "type"}]``) and
    turn its conditions into Spark SQL. ``names`` are the names the query reads the
    stream by (its name and alias), allowed as column qualifiers in the conditions.

    Raises:
        ValidationError: a condition that does not parse or that the SQL policy refuses
            (:func:`streamjob.policy.parse_expression`), names an unknown column or
            another table, or a KEYEDBY column the stream does not have, at its place.
    """
    from sqlglot import exp

    from .. import policy

    declared = {c["name"].lower(): c["name"] for c in columns}
    keys = []
    for key, span in clause.keys:
        if key.lower() not in declared:
            raise qt.error(f"KEYEDBY column '{key}' is not a column of the stream (columns: "
                           f"{', '.join(declared.values())})", span)
        keys.append(declared[key.lower()])

    def condition(p: Predicate | None, word: str) -> policy.CheckedSQL | None:
        if p is None:
            return None
        # the condition alone, at its offsets in the query: the SQL policy reads it as
        # it reads a query (functions, clauses, nesting) and renders what Spark gets
        masked = "".join(c if c == "\n" else " " for c in qt.text[:p.start]) + p.text
        what = f"SESSIONWINDOW {word} condition"
        tree = policy.parse_expression(qt, masked, what)
        for col in list(tree.find_all(exp.Column)):
            where = qt.span(col.this._meta["start"], col.this._meta["end"]) \
                if getattr(col.this, "_meta", None) else p.span
            if col.table and col.table.lower() not in names:
                raise qt.error(f"a SESSIONWINDOW condition reads only the stream it follows, "
                               f"not '{col.table}'", where)
            if col.name.lower() not in declared:
                raise qt.error(f"unknown column '{col.name}' in SESSIONWINDOW condition "
                               f"(columns: {', '.join(declared.values())})", where)
            col.replace(exp.column(declared[col.name.lower()], quoted=True))
        return policy.render_expression(qt, tree, what)

    return PredicateSpec(condition(clause.init, "INIT"), condition(clause.end, "END"),
                         clause.exclude_end,
                         tuple(keys), clause.timeout_ms, clause.timeout_text)


# ---------------------------------------------------------------- the meaning, in Python


@dataclass(frozen=True)
class Event:
    """One event of a key: its time (ms), whether INIT and END hold, and its row."""

    time: int
    init: bool
    end: bool
    row: Any = None


@dataclass
class Open:
    """The open session of a key: start and last event time (ms) and its rows."""

    start: int
    last: int
    rows: list = field(default_factory=list)


@dataclass(frozen=True)
class Closed:
    """A finished session: ``start``/``end`` in ms, and its rows in event order."""

    start: int
    end: int
    rows: tuple


@dataclass(frozen=True)
class SessionMachine:
    """The session rules of this module for one key, as a pure function of the ordered
    events: ``exclude_end`` (END[... EXCLUDE]) and ``timeout_ms`` (TIMEOUT, or None)."""

    exclude_end: bool = False
    timeout_ms: int | None = None

    def feed(self, open_: Open | None, events: Iterable[Event]) -> tuple[Open | None, list[Closed]]:
        """Process ``events`` (in time order, all before the watermark) from state
        ``open_``; returns the new state and the sessions closed, in order."""
        closed: list[Closed] = []
        for ev in events:
            if open_ is not None and self.timeout_ms is not None \
                    and ev.time > open_.last + self.timeout_ms:
                closed.append(Closed(open_.start, open_.last + self.timeout_ms, tuple(open_.rows)))
                open_ = None
            if open_ is None:
                if ev.init:
                    open_ = Open(ev.time, ev.time, [ev.row])
                continue
            if ev.end:
                rows = open_.rows if self.exclude_end else open_.rows + [ev.row]
                closed.append(Closed(open_.start, ev.time, tuple(rows)))
                open_ = None
                continue
            open_.rows.append(ev.row)
            open_.last = ev.time
        return open_, closed

    def expire(self, open_: Open | None, watermark: int) -> tuple[Open | None, list[Closed]]:
        """Close ``open_`` by TIMEOUT when its deadline is before ``watermark`` (ms)."""
        if open_ is None or self.timeout_ms is None or self.deadline(open_) >= watermark:
            return open_, []
        return None, [Closed(open_.start, self.deadline(open_), tuple(open_.rows))]

    def deadline(self, open_: Open) -> int | None:
        """When ``open_`` times out (ms), or None without TIMEOUT."""
        return None if self.timeout_ms is None else open_.last + self.timeout_ms

    def batch(self, events: Iterable[Event]) -> list[Closed]:
        """All sessions of a finite, complete list of one key's events (sorted here,
        stably, by time); a session left open is closed only by TIMEOUT."""
        open_, closed = self.feed(None, sorted(events, key=lambda e: e.time))
        _, more = self.expire(open_, 2 ** 62)
        return closed + more
