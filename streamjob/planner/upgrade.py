"""How a change of a job's query carries its checkpoint (issue 30; docs/upgrades.md).

:func:`classify` compares the plan of a job's current query with the plan of its
replacement, before anything changes, and puts the change in one of three classes:

- **stateless** — neither query keeps state: the offsets are kept (Spark resumes a
  stateless query from its offsets whatever its projection and filter);
- **compatible** — both keep state in the same stateful operators, with the same keys
  and the same aggregates: the offsets and the state are kept (e.g. an aggregation
  gains an output column computed from its keys or its existing aggregates);
- **incompatible** — anything else: the reasons name the operator and the column, and
  the choices left are a new checkpoint epoch ``FROM EARLIEST`` or ``FROM TIMESTAMP t``,
  or ``WITH STATE RESET`` (the offsets kept, the state rebuilt from there).

The rule is Spark's state schema rule (``StateSchemaCompatibilityChecker``: each
stateful operator's key schema and value schema must stay the same), read from the
planned Spark SQL as the planner sees it (:func:`.explain.state`): an aggregation's key
is its grouping expressions, its value the buffers of its aggregate functions; a
deduplication's key its select list; a stream-stream join's key its equalities. It is
stricter than Spark's check, which compares types only: ``group by name`` replaced by
``group by upper(name)`` passes Spark's check but would read state kept for other keys,
and is refused here. The set of source streams must stay the same for every class
(Spark keeps one offset entry per source).

No Spark, no catalog: pure over two :class:`~.plan.JobPlan`. Used by ALTER STREAMJOB ...
AS, CREATE OR REPLACE STREAMJOB (streamjob/executor/upgrade.py) and the shadow run.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp, parse_one

__all__ = ["ChangeClass", "ChangeKind", "Operator", "classify", "stateful_operators"]

#: Keep the offsets of the latest checkpoint and rebuild the state from there (a new
#: checkpoint epoch whose start offsets are the old checkpoint's committed offsets).
STATE_RESET = "WITH STATE RESET"
#: The new checkpoint epochs that start over (DESIGN §4).
EPOCHS = ("FROM EARLIEST", "FROM TIMESTAMP 'yyyy-MM-dd HH:mm:ss'")
#: The ways out of an incompatible change.
CHOICES = (*EPOCHS, STATE_RESET)


class ChangeKind(str, enum.Enum):
    """The three classes of a query change (module docstring)."""

    STATELESS = "stateless"
    COMPATIBLE = "compatible"
    INCOMPATIBLE = "incompatible"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Operator:
    """A stateful operator of a plan, in Spark's operator order: ``kind`` (as EXPLAIN
    names it: ``streaming aggregation``, ``deduplication (DISTINCT)``, ``stream-stream
    join``, ...), ``keys`` (its state key: normalized Spark SQL, lower case, without
    table qualifiers), ``values`` (what its state value holds: an aggregation's aggregate
    functions, normalized and without duplicates, as Spark shares equal buffers) and
    ``shown`` (the keys as EXPLAIN writes them, for messages)."""

    kind: str
    keys: tuple[str, ...]
    values: tuple[str, ...] = ()
    shown: tuple[str, ...] = field(default=(), compare=False)


@dataclass(frozen=True)
class ChangeClass:
    """The class of one change (module docstring).

    ``reasons`` (incompatible only) one sentence per cause, each naming the operator and
    the column; ``operator`` and ``column`` those of the first cause (``column`` None
    when the cause has none, e.g. the source streams); ``keeps_offsets`` and
    ``keeps_state`` what the switch keeps; ``choices`` (incompatible only) the ways out
    the user may append to the statement: the START positions of a new checkpoint epoch
    and :data:`STATE_RESET`; ``judge`` who found the class (``planner``: the static
    comparison of the two plans; ``spark``: Spark's state schema check on a copy of the
    checkpoint, executor/state_trial.py)."""

    kind: ChangeKind
    reasons: tuple[str, ...] = ()
    operator: str | None = None
    column: str | None = None
    choices: tuple[str, ...] = ()
    judge: str = "planner"

    @property
    def keeps_offsets(self) -> bool:
        return self.kind is not ChangeKind.INCOMPATIBLE

    @property
    def keeps_state(self) -> bool:
        return self.kind is not ChangeKind.INCOMPATIBLE

    def summary(self) -> str:
        """One line for a statement's result, ``check`` and EXPLAIN."""
        if self.kind is ChangeKind.STATELESS:
            return "stateless change: the offsets are kept"
        if self.kind is ChangeKind.COMPATIBLE:
            return ("stateful change with compatible state (same stateful operators, keys "
                    "and aggregates): the offsets and the state are kept")
        epochs = [c for c in self.choices if c != STATE_RESET]
        text = (f"incompatible change: {'; '.join(self.reasons)}; choose a new checkpoint "
                f"epoch: {' or '.join(epochs)}")
        if STATE_RESET in self.choices:
            text += f", or keep the offsets and rebuild the state: {STATE_RESET}"
        return text

    def as_json(self) -> dict[str, Any]:
        """``{"class", "reasons", "operator", "column", "keeps_offsets", "keeps_state",
        "choices", "judge"}`` (docs/json.md)."""
        return {"class": self.kind.value, "reasons": list(self.reasons),
                "operator": self.operator, "column": self.column,
                "keeps_offsets": self.keeps_offsets, "keeps_state": self.keeps_state,
                "choices": list(self.choices), "judge": self.judge}


def stateful_operators(plan) -> list[Operator]:
    """The stateful operators of ``plan`` (a JobPlan), in the order Spark numbers them
    (:func:`.explain.state`), with their keys and aggregates normalized (module
    docstring)."""
    from .explain import state

    found = state(plan)
    values = iter(_aggregates(plan))
    out = []
    for op in found:
        kind = op["operator"]
        shown = tuple(op["keys"])
        vals = next(values, ()) if kind == "streaming aggregation" else ()
        if kind.startswith("CEP pattern") and plan.query.pattern is not None:
            vals = (repr(plan.query.pattern),)
        out.append(Operator(kind, tuple(_norm(k) for k in shown), vals, shown))
    return out


def classify(old, new) -> "ChangeClass":
    """The class of replacing the query planned as ``old`` by the one planned as ``new``
    (both :class:`~.plan.JobPlan` of the same job; module docstring).

    Returns:
        a :class:`ChangeClass`; incompatible ones name each operator and column.
    """
    reasons: list[tuple[str, str | None, str | None]] = []  # (sentence, operator, column)
    old_sources = sorted(s.stream.qualified_name for s in old.sources)
    new_sources = sorted(s.stream.qualified_name for s in new.sources)
    if old_sources != new_sources:
        gone = [s for s in old_sources if s not in new_sources]
        came = [s for s in new_sources if s not in old_sources]
        reasons.append((
            "its source streams change (" + "; ".join(
                [*(f"{s} no longer read" for s in gone), *(f"{s} read" for s in came)])
            + "): Spark keeps the offsets of each source in the checkpoint", "sources", None))
    before, after = stateful_operators(old), stateful_operators(new)
    if not before and not after and not reasons:
        return ChangeClass(ChangeKind.STATELESS)
    if bool(before) != bool(after):
        op = (after or before)[0]
        sentence = (f"the query now keeps state ({op.kind} on {', '.join(op.shown) or 'no key'}) "
                    "that its checkpoint does not hold" if after else
                    f"the query no longer keeps the state of its {op.kind}, which its "
                    "checkpoint holds")
        reasons.append((sentence, op.kind, op.shown[0] if op.shown else None))
    elif len(before) != len(after):
        reasons.append((f"its stateful operators change from "
                        f"{', '.join(o.kind for o in before)} to "
                        f"{', '.join(o.kind for o in after)}", after[0].kind, None))
    else:
        for a, b in zip(before, after):
            reasons += _operator_change(a, b)
    if not reasons:
        return ChangeClass(ChangeKind.COMPATIBLE)
    _sentence, operator, column = reasons[0]
    return ChangeClass(ChangeKind.INCOMPATIBLE, tuple(r[0] for r in reasons), operator,
                       column, CHOICES)


def _operator_change(a: Operator, b: Operator) -> list[tuple[str, str, str | None]]:
    """Why operator ``a``'s state cannot be read as ``b``'s ([] if it can)."""
    if a.kind != b.kind:
        return [(f"{a.kind} becomes {b.kind}", b.kind, b.shown[0] if b.shown else None)]
    out = []
    if a.keys != b.keys:
        gone = [s for s, k in zip(a.shown, a.keys) if k not in b.keys]
        came = [s for s, k in zip(b.shown, b.keys) if k not in a.keys]
        what = "join keys" if "join" in a.kind else (
            "distinct columns" if "DISTINCT" in a.kind else "grouping keys")
        parts = [*(f"{k} removed" for k in gone), *(f"{k} added" for k in came)]
        if not parts:
            parts = [f"their order changes from {', '.join(a.shown)} to {', '.join(b.shown)}"]
        column = (gone or came or list(b.shown) or [None])[0]
        out.append((f"{a.kind}: its {what} change ({'; '.join(parts)}): its state is kept "
                    "by key", a.kind, column))
    if a.values != b.values:
        gone = [v for v in a.values if v not in b.values]
        came = [v for v in b.values if v not in a.values]
        parts = [*(f"{v} removed" for v in gone), *(f"{v} added" for v in came)] or [
            "their order changes"]
        out.append((f"{a.kind}: its aggregates change ({'; '.join(parts)}): its state holds "
                    "one buffer per aggregate", a.kind, (came or gone or [None])[0]))
    return out


def _aggregates(plan) -> list[tuple[str, ...]]:
    """The aggregate functions of each aggregating select of ``plan``, in the order
    :func:`.explain.state` lists the aggregations."""
    streams = {s.view for s in (*plan.sources, *plan.derived)}
    trees = [parse_one(d.select_sql, read="spark") for d in plan.derived]
    if plan.query.pattern is None:
        trees.append(parse_one(plan.query.select_sql, read="spark"))
    out = []
    for select in (s for tree in trees for s in tree.find_all(exp.Select)):
        if not any(t.name in streams for t in select.find_all(exp.Table)):
            continue
        aggs = [a for a in select.find_all(exp.AggFunc) if a.find_ancestor(exp.Select) is select]
        if select.args.get("group") is not None or aggs:
            seen: list[str] = []
            for a in aggs:
                text = _norm(a.sql(dialect="spark"))
                if text not in seen:
                    seen.append(text)
            out.append(tuple(seen))
    return out


def _norm(sql: str) -> str:
    """``sql`` compared as Spark resolves it: case-insensitive, without backquotes and
    without table qualifiers (``a.name`` and ``name`` are one column)."""
    text = sql.lower().replace("`", "")
    text = re.sub(r"\b[a-z_][a-z0-9_]*\.(?=[a-z_])", "", text)
    return re.sub(r"\s+", " ", text).strip()
