"""The CEP matcher: a pattern's partial matches of one key, advanced one event at a
time (pure Python, no Spark; :mod:`streamjob.spark.cep` feeds it in event-time order
and keeps its state in the job's checkpoint).

Shapes. A :class:`Pattern` is a tuple of :class:`Stage` (one per pattern variable, in
order) and ``within_ms``. An event is a ``dict`` column -> value (SQL NULL is None) plus
its time in milliseconds (event time, or the micro-batch's processing time). A
condition is a small expression tree of tuples (:func:`evaluate`), compiled from SQL by
:mod:`.parse`; it reads ``(variable, column)`` pairs.

Rules (Slipstream 5.1 names the operators; where its docs are silent these follow
Flink CEP's documented semantics, cited per rule):

* **Start.** Every event that satisfies the first variable's condition starts a new
  partial match, even one already taken by another match (Flink's default
  ``AfterMatchSkipStrategy.noSkip()``: overlapping matches are all emitted).
* **FOLLOWEDBY** (Flink ``followedBy``, relaxed contiguity): the first later event that
  satisfies the variable's condition is taken; non-matching events in between are
  ignored. Only the first is taken (not Flink's ``followedByAny``).
* **NEXT** (Flink ``next``, strict contiguity): the event right after the previous
  variable's last event must satisfy the condition, else the partial match is dropped.
* **NOTNEXT** (Flink ``notNext``): the event right after the previous variable's last
  event must not satisfy the condition (else the partial match is dropped); that same
  event is then offered to the variable after it.
* **NOTFOLLOWEDBY** (Flink ``notFollowedBy``): no event satisfying the condition may
  come between the previous variable and the next one; an event satisfying both the
  NOT condition and the next variable's drops the partial match (the NOT is checked
  first). A pattern may neither start nor end with NOTNEXT/NOTFOLLOWEDBY (Flink refuses
  both too), and a negated variable takes no quantifier.
* **TIMES(n)** takes exactly n events; **ONEORMORE** one or more. Between repetitions
  contiguity is relaxed (Flink's default for ``times``/``oneOrMore``: non-matching
  events in between are ignored). Repetition is non-greedy (Flink's default): once the
  minimum is reached, an event may both extend the repetition and move on to the next
  variable, and both partial matches are kept; so ``a ONEORMORE`` followed by ``b``
  over ``a1 a2 b`` gives ``{a1 b}``, ``{a1 a2 b}`` and ``{a2 b}``, and a pattern that
  ends with ONEORMORE emits a match at each repetition.
* **WITHIN** bounds a match from its first to its last event: the span must be less
  than WITHIN (Flink's NFA prunes a partial match once ``time - start >= within``).
  Partial matches that can no longer finish are dropped when time (the watermark)
  passes ``start + within``.
* **Conditions** are SQL's three-valued logic: a condition that is NULL does not match.
  In its own condition a variable's columns are the event's being tested; an earlier
  variable that took several events reads its last one (as SQL's MATCH_RECOGNIZE reads
  ``A.price`` in MEASURES: the last row mapped to A). The match's output row reads the
  same way: ``e2.col`` is e2's last event.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Stage:
    """One pattern variable: ``var`` (its name), ``condition`` (an expression tree,
    :func:`evaluate`), ``link`` how it follows the previous variable (``"start"`` for
    the first, else ``"next"``, ``"followedby"``, ``"notnext"`` or ``"notfollowedby"``),
    ``min``/``max`` events it takes (1/1; TIMES(n): n/n; ONEORMORE: 1/None)."""

    var: str
    condition: tuple
    link: str = "start"
    min: int = 1
    max: int | None = 1

    @property
    def negated(self) -> bool:
        return self.link in ("notnext", "notfollowedby")


@dataclass(frozen=True)
class Pattern:
    """A pattern: its stages in order and ``within_ms`` (milliseconds)."""

    stages: tuple[Stage, ...]
    within_ms: int

    @property
    def positive(self) -> tuple[Stage, ...]:
        """The stages that take events (not NOTNEXT/NOTFOLLOWEDBY)."""
        return tuple(s for s in self.stages if not s.negated)

    def guards(self, index: int) -> tuple[Stage, ...]:
        """The negated stages just before positive stage ``index``."""
        out, pos = [], -1
        for s in self.stages:
            if s.negated:
                out.append(s)
                continue
            pos += 1
            if pos == index:
                return tuple(out)
            out = []
        return ()


@dataclass
class Partial:
    """A partial match: ``stage`` (index into the positive stages) and ``count`` events
    taken by it (0: waiting for its first event), ``fresh`` (no event seen since the
    last one taken: NEXT/NOTNEXT apply), ``start`` (ms of its first event) and
    ``taken`` (per positive stage, the events taken, each ``(ms, row)``)."""

    stage: int
    count: int
    start: int
    taken: list = field(default_factory=list)
    fresh: bool = True


def _null(f):
    def g(a, b):
        return None if a is None or b is None else f(a, b)
    return g


def _like(value, pattern):
    rx = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern)
    return re.fullmatch(rx, value, re.S) is not None


_BINARY = {
    "eq": _null(operator.eq), "neq": _null(operator.ne), "lt": _null(operator.lt),
    "lte": _null(operator.le), "gt": _null(operator.gt), "gte": _null(operator.ge),
    "add": _null(operator.add), "sub": _null(operator.sub), "mul": _null(operator.mul),
    "div": _null(lambda a, b: None if b == 0 else a / b),
    "mod": _null(lambda a, b: None if b == 0 else a % b),
    "like": _null(lambda a, b: _like(str(a), str(b))),
}


def evaluate(node: tuple, env: dict):
    """The value of expression tree ``node`` over ``env`` (variable -> row dict).

    Nodes: ``("lit", v)``, ``("col", var, column)``, ``(op, a, b)`` for op in
    eq/neq/lt/lte/gt/gte/add/sub/mul/div/mod/like, ``("and", a, b)``, ``("or", a, b)``,
    ``("not", a)``, ``("neg", a)``, ``("isnull", a)``, ``("in", a, (items...))``,
    ``("between", a, lo, hi)``. NULL (None) propagates as in SQL; AND/OR/NOT are
    three-valued; division by zero is NULL (Spark's non-ANSI rule)."""
    kind = node[0]
    if kind == "lit":
        return node[1]
    if kind == "col":
        row = env.get(node[1])
        return None if row is None else row.get(node[2])
    if kind == "and":
        a = evaluate(node[1], env)
        if a is False:
            return False
        b = evaluate(node[2], env)
        return False if b is False else (None if a is None or b is None else True)
    if kind == "or":
        a = evaluate(node[1], env)
        if a is True:
            return True
        b = evaluate(node[2], env)
        return True if b is True else (None if a is None or b is None else False)
    if kind == "not":
        a = evaluate(node[1], env)
        return None if a is None else not a
    if kind == "neg":
        a = evaluate(node[1], env)
        return None if a is None else -a
    if kind == "isnull":
        return evaluate(node[1], env) is None
    if kind == "in":
        a = evaluate(node[1], env)
        if a is None:
            return None
        items = [evaluate(i, env) for i in node[2]]
        return True if a in items else (None if None in items else False)
    if kind == "between":
        a, lo, hi = (evaluate(n, env) for n in node[1:])
        return None if None in (a, lo, hi) else lo <= a <= hi
    return _BINARY[kind](evaluate(node[1], env), evaluate(node[2], env))


class Matcher:
    """The partial matches of one key. :meth:`feed` one event at a time, in order;
    :meth:`expire` when time passes without events. ``partials`` is the whole state
    (picklable: plain lists, dicts and :class:`Partial`)."""

    def __init__(self, pattern: Pattern, partials: list[Partial] | None = None,
                 unit: int = 1):
        """``unit``: time units per millisecond of the times fed (1: ms, 1000: µs)."""
        self.pattern = pattern
        self.stages = pattern.positive
        self.partials: list[Partial] = partials or []
        self.window = pattern.within_ms * unit

    def expire(self, now: int) -> None:
        """Drop partial matches that no event at ``now`` or later can finish (their
        first event is WITHIN or more before it)."""
        self.partials = [p for p in self.partials if now - p.start < self.window]

    def feed(self, ms: int, row: dict) -> list[list[list[dict]]]:
        """Advance every partial match by the event ``(ms, row)`` (``ms`` in the
        matcher's unit) and start a new one if it satisfies the first variable. Returns
        the matches completed by it, each a list (per positive stage) of the rows taken,
        in the order they completed."""
        self.expire(ms)
        done: list = []
        kept: list[Partial] = []
        for p in self.partials:
            kept += self._step(p, ms, row, done)
        first = self.stages[0]
        if self._holds(first, row, []):
            kept += self._take(Partial(0, 0, ms, [[] for _ in self.stages]), ms, row, done)
        self.partials = kept
        return done

    def _env(self, taken: list, stage: Stage | None = None, row: dict | None = None) -> dict:
        env = {s.var: rows[-1][1] for s, rows in zip(self.stages, taken) if rows}
        if stage is not None:
            env[stage.var] = row
        return env

    def _holds(self, stage: Stage, row: dict, taken: list) -> bool:
        return evaluate(stage.condition, self._env(taken, stage, row)) is True

    def _take(self, p: Partial, ms: int, row: dict, done: list) -> list[Partial]:
        """``p`` with ``row`` taken by its current stage: the partial matches that follow
        (still repeating, and/or waiting for the next stage), completed ones in ``done``."""
        taken = [list(r) for r in p.taken]
        taken[p.stage].append((ms, row))
        count = p.count + 1
        stage = self.stages[p.stage]
        out = []
        if stage.max is None or count < stage.max:
            out.append(Partial(p.stage, count, p.start, taken, True))
        if count >= stage.min:
            if p.stage + 1 == len(self.stages):
                done.append([[r for _, r in rows] for rows in taken])
            else:
                out.append(Partial(p.stage + 1, 0, p.start, taken, True))
        return out

    def _step(self, p: Partial, ms: int, row: dict, done: list) -> list[Partial]:
        stage = self.stages[p.stage]
        if p.count > 0:  # repeating: relaxed between repetitions
            if self._holds(stage, row, p.taken):
                return self._take(p, ms, row, done)
            return [p]
        for guard in self.pattern.guards(p.stage):
            if guard.link == "notnext" and not p.fresh:
                continue
            if self._holds(guard, row, p.taken):
                return []
        if self._holds(stage, row, p.taken):
            return self._take(p, ms, row, done)
        if stage.link == "next" and p.fresh:
            return []
        p.fresh = False
        return [p]
