"""A job's query over ``FROM PATTERN (...) WITHIN (...)`` (Slipstream 5.1's CEP), planned.

The clause is read by :mod:`streamjob.planner.pattern`; this module resolves it against the
catalog and compiles it for the matcher (:mod:`streamjob.cep.nfa`, whose docstring holds
the matching rules):

* every variable reads one stream (the same for all: a pattern over several streams is
  refused, with the rewrite: a derived stream that unions them);
* conditions are compiled to the matcher's expression trees: comparisons, arithmetic,
  AND/OR/NOT, IS [NOT] NULL, IN, BETWEEN, LIKE, literals and ``var.column`` (a bare
  column is the variable's own); a condition reads its own variable and earlier
  positive ones, never a later one;
* **the key**: the pattern runs per value of the columns ``c`` for which every variable
  after the first (NOT variables included) has a top-level AND-ed equality
  ``ek.c = ej.c`` with an earlier variable (``e2.id = e1.id`` keys the pattern by
  ``id``): all events of one match then share ``c``, so matching each value of ``c``
  apart finds the same matches. Without such equalities (or with one variable) the
  pattern runs on one key: one task holds all partial matches (EXPLAIN says so).
* the select reads the match: ``e1.col`` is a column of the variable's event (its last
  event for TIMES/ONEORMORE); the matcher's output has one column ``<var>__<col>`` per
  positive variable and stream column, and the select is rewritten over it. A WHERE
  filters matches; GROUP BY, aggregates, joins and ``*`` are refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from .. import policy
from ..cep.nfa import Pattern, Stage
from .pattern import PLACEHOLDER, PatternClause
from .lookup import Lookup
from .text import QueryText, Span

#: The temporary view of a job's matches (one PATTERN per job).
MATCH_VIEW = "sj__cep__matches"


@dataclass(frozen=True)
class CepPlan:
    """What :mod:`streamjob.spark.cep` needs to run a pattern: ``pattern`` (the
    matcher's), the stream (``database``, ``stream``, its ``view``), its ``columns``
    (``(name, type)`` as declared), the ``key`` columns (empty: one key),
    ``time_column`` (event time; None: processing time) and ``outputs`` (the matches'
    ``(column, type)``)."""

    pattern: Pattern
    database: str
    stream: str
    view: str
    columns: tuple[tuple[str, str], ...]
    key: tuple[str, ...]
    time_column: str | None
    outputs: tuple[tuple[str, str], ...]
    within: str = ""
    variables: tuple[str, ...] = field(default=())

    @property
    def proctime(self) -> bool:
        return self.time_column is None


@dataclass(frozen=True)
class CepSelect:
    """The select over the matches: Spark SQL over :data:`MATCH_VIEW`, the output names
    and types (None when not a plain column), where the select list starts, the tree."""

    select_sql: policy.CheckedSQL
    plan: CepPlan
    output_columns: tuple[str | None, ...]
    output_types: tuple[str | None, ...]
    select_span: Span | None
    tree: exp.Expr


_BINARY = {exp.EQ: "eq", exp.NEQ: "neq", exp.LT: "lt", exp.LTE: "lte", exp.GT: "gt",
           exp.GTE: "gte", exp.Add: "add", exp.Sub: "sub", exp.Mul: "mul", exp.Div: "div",
           exp.Mod: "mod", exp.Like: "like", exp.And: "and", exp.Or: "or"}


def analyze_pattern(qt: QueryText, select: exp.Expr, clause: PatternClause, lookup: Lookup,
                    default_database: str, view_of) -> CepSelect:
    """Resolve the select over PATTERN ``clause``; ``view_of(database, name)`` names a
    stream's temporary view.

    Raises:
        ValidationError: an unknown stream, variables over different streams, a repeated
            variable name, a pattern starting or ending with NOTNEXT/NOTFOLLOWEDBY, a
            quantifier on a NOT variable, an unknown column or variable, a condition
            reading a later variable or a NOT one, an expression the matcher does not
            evaluate, a select that is not a projection of variables' columns over the
            pattern alone; each at its line and column.
    """
    first = clause.variables[0]
    db, name = first.stream[0] or default_database, first.stream[1]
    kind = lookup.kind(db, name)
    if kind != "stream":
        what = "is a table; a PATTERN reads a stream" if kind else "does not exist"
        raise qt.error(f"stream {db}.{name} {what}", first.stream_span)
    for v in clause.variables[1:]:
        if (v.stream[0] or default_database, v.stream[1]) != (db, name):
            raise qt.error(f"every variable of a PATTERN reads one stream ({first.name} reads "
                           f"{db}.{name}); to match over several, union them in a derived "
                           f"stream and read that", v.stream_span)
    columns = tuple((c["name"].lower(), c["type"]) for c in lookup.columns(db, name))
    names = [c for c, _ in columns]
    _check_shape(qt, clause)
    stages = []
    seen: list[str] = []
    for v in clause.variables:
        if v.name in seen:
            raise qt.error(f"pattern variable {v.name} is declared twice", v.span)
        positive = [s.var for s in stages if not s.negated]
        cond = _compile(qt, v.condition, v.name, positive, seen, names, f"{db}.{name}")
        seen.append(v.name)
        stages.append(Stage(v.name, cond, v.link, v.min, v.max))
    key = derive_key(clause)
    event_time = lookup.event_time(db, name)
    variables = tuple(s.var for s in stages if not s.negated)
    outputs = tuple((f"{var}__{c}", t) for var in variables for c, t in columns)
    plan = CepPlan(Pattern(tuple(stages), clause.within_ms), db, name, view_of(db, name),
                   columns, key, event_time[0] if event_time else None, outputs,
                   clause.within_text, variables)
    return _rewrite_select(qt, select, plan, dict(columns))


def _check_shape(qt: QueryText, clause: PatternClause) -> None:
    vs = clause.variables
    if len(vs) > 1 and vs[-1].link.startswith("not"):
        raise qt.error("a PATTERN cannot end with NOTNEXT/NOTFOLLOWEDBY (as in Flink CEP): "
                       "nothing would say when the match is complete", vs[-1].span)
    for v in vs:
        if v.link.startswith("not") and (v.min, v.max) != (1, 1):
            raise qt.error(f"the NOT variable {v.name} takes no TIMES/ONEORMORE", v.span)


def derive_key(clause: PatternClause) -> tuple[str, ...]:
    """The key columns of the pattern (module docstring): those ``c`` with an AND-ed
    ``ek.c = ej.c`` (j before k, ej not a NOT variable) in every variable after the
    first; ``()`` when none (one key)."""
    variables = clause.variables
    if len(variables) < 2:
        return ()
    common: set[str] | None = None
    earlier = {variables[0].name}
    order: list[str] = []
    for v in variables[1:]:
        found = set()
        for conj in _conjuncts(v.condition):
            if isinstance(conj, exp.EQ) and all(isinstance(s, exp.Column)
                                                for s in (conj.this, conj.expression)):
                a, b = conj.this, conj.expression
                tables = {a.table.lower(), b.table.lower()}
                if a.name.lower() == b.name.lower() and v.name in tables \
                        and (tables - {v.name}) <= earlier and len(tables) == 2:
                    found.add(a.name.lower())
                    if a.name.lower() not in order:
                        order.append(a.name.lower())
        common = found if common is None else common & found
        if not v.link.startswith("not"):
            earlier.add(v.name)
    return tuple(c for c in order if c in (common or set()))


def _conjuncts(node: exp.Expr) -> list[exp.Expr]:
    """The AND-ed terms of ``node``, in order (without recursion: a chain of ANDs may be
    thousands long)."""
    out, todo = [], [node]
    while todo:
        n = todo.pop()
        while isinstance(n, exp.Paren):
            n = n.this
        if isinstance(n, exp.And):
            todo.extend((n.expression, n.this))
        else:
            out.append(n)
    return out


def _compile(qt: QueryText, node: exp.Expr, var: str, positive: list[str], seen: list[str],
             names: list[str], stream: str) -> tuple:
    """``node`` (a condition of variable ``var``) as the matcher's expression tree."""
    def go(n: exp.Expr) -> tuple:
        if isinstance(n, exp.Paren):
            return go(n.this)
        if isinstance(n, exp.Column):
            owner = (n.table or var).lower()
            if owner != var and owner not in positive:
                why = ("a NOT variable has no event to read" if owner in seen else
                       "it comes later in the pattern" if owner else "")
                why = why or "no such pattern variable"
                raise qt.error(f"condition of {var} reads {owner}.{n.name}: {why}",
                               qt.node_span(n))
            col = n.name.lower()
            if col not in names:
                raise qt.error(f"stream {stream} has no column {col} (columns: "
                               f"{', '.join(names)})", qt.node_span(n))
            return ("col", owner, col)
        if isinstance(n, exp.Literal):
            if n.is_string:
                return ("lit", n.this)
            text = n.this
            return ("lit", int(text) if text.lstrip("-").isdigit() else float(text))
        if isinstance(n, exp.Boolean):
            return ("lit", bool(n.this))
        if isinstance(n, exp.Null):
            return ("lit", None)
        if isinstance(n, exp.Not):
            return ("not", go(n.this))
        if isinstance(n, exp.Neg):
            return ("neg", go(n.this))
        if isinstance(n, exp.Is) and isinstance(n.expression, exp.Null):
            return ("isnull", go(n.this))
        if isinstance(n, exp.In) and n.expressions and not n.args.get("query"):
            return ("in", go(n.this), tuple(go(e) for e in n.expressions))
        if isinstance(n, exp.Between):
            return ("between", go(n.this), go(n.args["low"]), go(n.args["high"]))
        op = _BINARY.get(type(n))
        if op is not None:
            return (op, go(n.this), go(n.expression))
        raise qt.error(f"the condition of {var} uses '{n.sql(dialect='hive')}', which a "
                       f"PATTERN condition cannot evaluate; use comparisons, + - * / %, "
                       f"AND/OR/NOT, IS NULL, IN, BETWEEN and LIKE over columns and literals",
                       qt.node_span(n))
    try:
        return go(node)
    except RecursionError:  # a chain of thousands of ANDs: one level to the policy
        raise qt.error(f"the condition of {var} chains too many operators to evaluate; "
                       f"split it", qt.node_span(node)) from None


def _rewrite_select(qt: QueryText, select: exp.Expr, plan: CepPlan,
                    types: dict[str, str]) -> CepSelect:
    if not isinstance(select, exp.Select):
        raise qt.error("a PATTERN query is one 'select ... from PATTERN (...) WITHIN (...)'")
    tables = list(select.find_all(exp.Table))
    for t in tables:
        if t.name.lower() != PLACEHOLDER:
            raise qt.error("a PATTERN query reads the pattern alone (no joins or subqueries)",
                           qt.node_span(t))
    for key, word in (("group", "GROUP BY"), ("having", "HAVING"), ("joins", "a JOIN"),
                      ("order", "ORDER BY"), ("limit", "LIMIT"), ("distinct", "DISTINCT")):
        if select.args.get(key):
            raise qt.error(f"a PATTERN query selects from matches: {word} over matches is "
                           f"not supported", qt.node_span(select.args[key])
                           if isinstance(select.args[key], exp.Expr) else None)
    for agg in select.find_all(exp.AggFunc):
        raise qt.error("a PATTERN query selects from matches: aggregates over matches are "
                       "not supported", qt.node_span(agg))
    outputs, out_types = [], []
    for e in select.expressions:
        if isinstance(e, exp.Star) or any(isinstance(n, exp.Star) for n in e.walk()):
            raise qt.error("select the variables' columns (e1.id, e2.cnt), not *", qt.node_span(e))
        outputs.append(e.alias_or_name.lower() if e.alias_or_name else None)
        inner = e.this if isinstance(e, exp.Alias) else e
        out_types.append(types.get(inner.name.lower()) if isinstance(inner, exp.Column) else None)
    span = next((s for s in (qt.node_span(e) for e in select.expressions) if s), None)
    for col in list(select.find_all(exp.Column)):
        var = col.table.lower()
        if var not in plan.variables:
            what = (f"{var} is a NOT variable (it has no event)" if var in
                    [s.var for s in plan.pattern.stages] else
                    f"qualify {col.name} with a pattern variable ({', '.join(plan.variables)})"
                    if not var else f"no pattern variable {var}")
            raise qt.error(f"the select reads {col.sql()}: {what}", qt.node_span(col))
        if col.name.lower() not in types:
            raise qt.error(f"stream {plan.database}.{plan.stream} has no column "
                           f"{col.name.lower()} (columns: {', '.join(types)})", qt.node_span(col))
        col.replace(exp.column(f"{var}__{col.name.lower()}", quoted=True))
    for t in tables:
        t.replace(exp.Table(this=exp.to_identifier(MATCH_VIEW)))
    return CepSelect(policy.render(qt, select, "job's query"), plan, tuple(outputs),
                     tuple(out_types), span, select)
