"""Which sqlglot nodes, and which of their parts, SQL that reaches Spark may hold.

The allowlist is :data:`NODES`: for each expression or clause type the parts (sqlglot
``args``) the planner honours. A node of a type not listed, or a listed node with a part
set that is not listed, is refused at its line and column; nothing is ever dropped on
the way to Spark. Functions (``exp.Func`` subclasses other than the operators listed)
are allowed as nodes; their names are the function allowlist's business
(:mod:`.functions`, checked as written and as rendered).

Refused, and why (each with its own message, :data:`_REFUSED_TYPES`,
:data:`_REFUSED_PARTS`):

* script transforms (``SELECT TRANSFORM(...) USING 'cmd'``): Spark runs ``cmd`` as a
  process of the job manager's host, Hive or not; ``MAP``/``REDUCE ... USING`` are
  syntax errors of the query already;
* table-valued functions in FROM and LATERAL (``range(10)``, ``read_files(...)``,
  ``explode`` as a TVF): a job reads declared streams and tables only. The one exception
  is a table function of the query's database registered by ``CREATE FUNCTION ...
  RETURNS TABLE`` (a Python UDTF the admin's places hold, docs/functions.md "Table
  functions"), called by its bare name as ``FROM f(...)`` or ``LATERAL f(...)``; it
  is refused anywhere else (in a select list, in ``LATERAL VIEW``), and a scalar
  function is refused in its place;
* clauses of a table reference the planner cannot honour, because it rewrites each
  reference to its view: TABLESAMPLE, PIVOT/UNPIVOT, time travel (``VERSION AS OF``,
  ``TIMESTAMP AS OF``, ``FOR SYSTEM_TIME``), a catalog (``c.db.t``), a partition spec,
  table hints;
* INSERT OVERWRITE and INSERT ... PARTITION (a streamjob appends or upserts into its
  table);
* ``/*+ hints */``, QUALIFY, ``SELECT * EXCEPT``, inline VALUES, ``${var}`` parameters,
  ``:name``/``?`` placeholders and anything else sqlglot reads that is not in the list.

The tree is also bounded in depth (:data:`MAX_EXPRESSION_DEPTH`) before anything
recursive (sqlglot's generator, the planner) walks it; a left-deep chain of one binary
operator (``a + b + c ...``, ``x AND y AND ...``) counts as one level, as sqlglot parses
and prints those without recursion.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.tokens import Token

from ..exceptions import ValidationError
from ..grammar.limits import MAX_EXPRESSION_DEPTH
from .functions import ALLOWED_FUNCTIONS, REFUSED, function_error, user_functions

__all__ = ["ALLOWED_TABLE_FUNCTIONS", "NODES", "check_tree"]

_ANY = None  # every part (each child is a node, checked in turn) or flag

_OPERATORS = (
    exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ, exp.NullSafeNEQ,
    exp.Add, exp.Sub, exp.Mul, exp.Div, exp.IntDiv, exp.Mod, exp.And, exp.Or, exp.Xor,
    exp.Like, exp.ILike, exp.RegexpLike, exp.BitwiseAnd, exp.BitwiseOr, exp.BitwiseXor,
    exp.BitwiseLeftShift, exp.BitwiseRightShift, exp.BitwiseNot, exp.DPipe, exp.Is,
    exp.Escape, exp.Not, exp.Neg, exp.Paren, exp.Tuple, exp.Dot, exp.Lambda, exp.Var,
    exp.DataType, exp.DataTypeParam, exp.ColumnDef, exp.Filter, exp.IgnoreNulls,
    exp.RespectNulls, exp.WithinGroup, exp.Array, exp.Struct, exp.Map, exp.VarMap,
    exp.Kwarg, exp.Case, exp.If, exp.Null, exp.Boolean,
)

#: The allowlist: node type -> the parts it may have set (None: any).
NODES: dict[type, frozenset[str] | None] = {
    exp.Insert: frozenset({"this", "expression"}),
    exp.Select: frozenset({"with_", "expressions", "distinct", "from_", "laterals", "joins",
                           "where", "group", "having", "windows", "distribute", "sort",
                           "cluster", "order", "limit", "offset"}),
    exp.Union: frozenset({"with_", "this", "expression", "distinct", "order", "limit", "offset"}),
    exp.Except: frozenset({"with_", "this", "expression", "distinct", "order", "limit", "offset"}),
    exp.Intersect: frozenset({"with_", "this", "expression", "distinct", "order", "limit",
                              "offset"}),
    exp.Subquery: frozenset({"this", "alias"}),
    exp.From: frozenset({"this"}),
    exp.Join: frozenset({"this", "on", "side", "kind", "using"}),
    exp.Table: frozenset({"this", "db", "alias"}),
    exp.TableAlias: frozenset({"this", "columns"}),
    exp.Lateral: frozenset({"this", "view", "outer", "alias"}),
    exp.With: frozenset({"expressions"}),
    exp.CTE: frozenset({"this", "alias"}),
    exp.Where: frozenset({"this"}),
    exp.Having: frozenset({"this"}),
    exp.Group: frozenset({"expressions", "grouping_sets", "cube", "rollup"}),
    exp.Rollup: frozenset({"expressions"}),
    exp.Cube: frozenset({"expressions"}),
    exp.GroupingSets: frozenset({"expressions"}),
    exp.Order: frozenset({"expressions"}),
    exp.Ordered: frozenset({"this", "desc", "nulls_first"}),
    exp.Limit: frozenset({"this", "expression"}),
    exp.Offset: frozenset({"this", "expression"}),
    exp.Distinct: frozenset({"expressions"}),
    exp.Distribute: frozenset({"expressions"}),
    exp.Sort: frozenset({"expressions"}),
    exp.Cluster: frozenset({"expressions"}),
    exp.Window: frozenset({"this", "partition_by", "order", "spec", "alias", "over"}),
    exp.WindowSpec: frozenset({"kind", "start", "start_side", "end", "end_side"}),
    exp.Schema: frozenset({"this", "expressions"}),
    exp.Star: frozenset(),
    exp.Column: frozenset({"this", "table", "db"}),
    exp.Identifier: frozenset({"this", "quoted"}),
    exp.Literal: frozenset({"this", "is_string"}),
    exp.Alias: frozenset({"this", "alias"}),
    exp.Aliases: frozenset({"this", "expressions"}),
    exp.Bracket: frozenset({"this", "expressions", "offset", "safe", "returns_list_for_maps"}),
    exp.Interval: frozenset({"this", "unit"}),
    exp.Cast: frozenset({"this", "to"}),
    exp.TryCast: frozenset({"this", "to"}),
    exp.In: frozenset({"this", "expressions", "query"}),
    exp.Between: frozenset({"this", "low", "high"}),
    exp.Exists: frozenset({"this"}),
    exp.Anonymous: frozenset({"this", "expressions"}),
    # a field of STRUCT(...): Spark names it after its column (sqlglot's Spark dialect
    # reads ``struct(price)`` as ``price := price``); only inside a Struct (_check_node)
    exp.PropertyEQ: frozenset({"this", "expression"}),
    **{t: _ANY for t in _OPERATORS},
}

#: Table-valued functions a query may read in FROM: none (a job reads declared streams
#: and tables; generators go in LATERAL VIEW, whose function the allowlist checks).
ALLOWED_TABLE_FUNCTIONS: frozenset[str] = frozenset()

_TRANSFORM = ("a script transform (TRANSFORM ... USING '<command>') is not allowed: Spark "
              "runs the command as a process of the job manager's host")

#: Types refused with their own message and the keywords that locate them.
_REFUSED_TYPES: dict[type, tuple[str, tuple[str, ...]]] = {
    exp.QueryTransform: (_TRANSFORM, ("TRANSFORM",)),
    exp.TableSample: ("TABLESAMPLE is not supported: the planner reads every row of a "
                      "stream", ("TABLESAMPLE",)),
    exp.Pivot: ("PIVOT/UNPIVOT is not supported on a stream or table reference; write the "
                "columns out with CASE (or a UNION ALL)", ("PIVOT", "UNPIVOT")),
    exp.Version: ("time travel (VERSION/TIMESTAMP AS OF) is not supported: a job reads a "
                  "stream's or table's current data (a SELECT preview in the shell may read "
                  "a lakehouse table at a version)", ("VERSION", "TIMESTAMP", "FOR")),
    exp.Hint: ("hints (/*+ ... */) are not supported: Spark plans the joins", ("/*+",)),
    exp.Qualify: ("QUALIFY is not supported: filter in an outer select", ("QUALIFY",)),
    exp.Values: ("inline VALUES are not supported: a job reads declared streams and tables",
                 ("VALUES",)),
    exp.Parameter: ("parameters (${name}, @name) are not supported in a query: write the "
                    "value (script variables are substituted before the query is read)",
                    ()),
    exp.Placeholder: ("placeholders (?, :name) are not supported in a query: write the "
                      "value", ()),
    exp.SessionParameter: ("session variables (@@name) are not supported in a query", ()),
    exp.Partition: ("a PARTITION (...) spec is not supported here: a streamjob writes rows "
                    "with their partition columns", ("PARTITION",)),
}

#: Parts refused with their own message: (node type, part) -> (message, keywords).
_REFUSED_PARTS: dict[tuple[type, str], tuple[str, tuple[str, ...]]] = {
    (exp.Insert, "overwrite"): ("INSERT OVERWRITE is not supported: a streamjob appends (or "
                                "upserts) into its table; write INSERT INTO", ("OVERWRITE",)),
    (exp.Table, "catalog"): ("a three-part name (catalog.database.table) is not supported: "
                             "name a stream or table as database.name", ()),
    (exp.Table, "hints"): ("table hints are not supported", ("WITH",)),
    (exp.Star, "except_"): ("SELECT * EXCEPT (...) is not supported: list the columns",
                            ("EXCEPT",)),
    (exp.Star, "replace"): ("SELECT * REPLACE (...) is not supported: list the columns",
                            ("REPLACE",)),
}


def _described(node: exp.Expr) -> str:
    return node.key.upper().replace("_", " ")


def check_tree(qt, statements: list[exp.Expr], what: str, tokens: list[Token] | None) -> None:
    """Refuse a node or part outside :data:`NODES`, a table-valued function in FROM and
    a tree deeper than :data:`MAX_EXPRESSION_DEPTH`.

    Args:
        qt: the :class:`~streamjob.planner.text.QueryText` the tree was parsed from.
        statements: the parsed statements (or one expression).
        what: "job's query", "derived stream's query", ... for the message.
        tokens: the text's tokens (to place a clause at its keyword), or None.

    Raises:
        ValidationError: at the offending node's line and column (its keyword when it
            has one), saying what is refused and why.
    """
    for root in statements:
        _check_depth(qt, root, what)
        for node in root.walk():
            _check_node(qt, node, what, tokens or [])


def _check_node(qt, node: exp.Expr, what: str, tokens: list[Token]) -> None:
    kind = type(node)
    refused = _REFUSED_TYPES.get(kind)
    if refused is not None:
        raise _error(qt, node, node, refused, what, tokens)
    allowed = NODES.get(kind, _ANY if isinstance(node, exp.Func) else False)
    if kind is exp.PropertyEQ and not isinstance(node.parent, exp.Struct):
        allowed = False
    if isinstance(node, exp.Func):
        _check_function(qt, node, what)
    if allowed is False:
        raise _error(qt, node, node, (f"{_described(node)} is not supported in a {what} "
                                      "(docs/security.md, sql-policy)", ()), what, tokens)
    if kind is exp.Table and not isinstance(node.this, exp.Identifier):
        name = node.this.sql_name() if isinstance(node.this, exp.Func) else _described(node.this)
        name = node.this.name if isinstance(node.this, exp.Anonymous) else name
        if name.lower() in ALLOWED_TABLE_FUNCTIONS:
            return
        if not (_user_table_function(qt, node.this) and not node.args.get("db")):
            raise _error(qt, node.this, node, (
                f"table-valued function {name.lower()}() in FROM is not supported: a "
                f"{what} reads declared streams and tables (and the table functions of its "
                "database, CREATE FUNCTION ... RETURNS TABLE)", ()), what, tokens)
    if kind in (exp.Table, exp.Column):  # names are names: the planner reads their text
        for part in ("db", "table") + (("this",) if kind is exp.Column else ()):
            value = node.args.get(part)
            if value is not None and not isinstance(value, exp.Identifier) and not (
                    part == "this" and isinstance(value, exp.Star)):
                raise _error(qt, value, node, (
                    f"{_described(value)} where a name belongs is not supported in a {what}",
                    ()), what, tokens)
    if kind is exp.Join and isinstance(node.this, exp.Lateral) and not node.this.args.get("view"):
        on = node.args.get("on")
        plain = on is None or (isinstance(on, exp.Boolean) and on.this is True)
        if node.side or not plain or node.args.get("using"):
            raise _error(qt, on if on is not None else node, node, (
                "a lateral join takes no condition or side here: write FROM s, LATERAL "
                "f(...) t (or CROSS JOIN LATERAL) and filter in WHERE (Spark runs an inner "
                "or outer lateral join with a condition on a stream only as an "
                "aggregation)", ("LEFT", "RIGHT", "FULL", "ON", "USING")), what, tokens)
    if kind is exp.Lateral and node.args.get("view") and _user_table_function(qt, node.this):
        raise _error(qt, node, node, (
            f"table function {node.this.name.lower()}() is called as LATERAL "
            f"{node.this.name.lower()}(...) [AS t(col, ...)], not in LATERAL VIEW (Spark "
            "reads Python table functions there only)", ("LATERAL",)), what, tokens)
    if kind is exp.Lateral and not node.args.get("view") \
            and not _user_table_function(qt, node.this):
        name = None
        if isinstance(node.this, exp.Anonymous):
            name = node.this.name.lower()
        elif isinstance(node.this, exp.Func):
            name = node.this.sql_name().lower()
        message = (f"table-valued function {name}() in LATERAL is not supported: only the "
                   "table functions of the query's database (CREATE FUNCTION ... RETURNS "
                   "TABLE) are; LATERAL VIEW explode(...) is" if name else
                   "LATERAL subqueries are not supported; LATERAL VIEW explode(...) is")
        raise _error(qt, node, node, (message, ("LATERAL",)), what, tokens)
    if allowed is _ANY:
        return
    for part, value in node.args.items():
        if part in allowed or value is None or value is False or value == []:
            continue
        target = value[0] if isinstance(value, list) else value
        refused = _REFUSED_PARTS.get((kind, part)) or _REFUSED_TYPES.get(type(target))
        if refused is None:
            refused = (f"{part.rstrip('_').replace('_', ' ').upper()} in "
                       f"{_described(node)} is not supported in a {what} (docs/security.md, "
                       "sql-policy)", ())
        raise _error(qt, target if isinstance(target, exp.Expr) else node, node, refused,
                     what, tokens)


def _user_table_function(qt, node: exp.Expr) -> bool:
    """True when ``node`` calls a table function of the query's database
    (``CREATE FUNCTION ... RETURNS TABLE``) by its bare name."""
    if not isinstance(node, exp.Anonymous):
        return False
    fn = user_functions(qt).get(node.name.lower())
    return fn is not None and getattr(fn, "is_table", False) \
        and node.name.lower() not in ALLOWED_FUNCTIONS


def _table_place(node: exp.Expr) -> bool:
    """True when ``node`` stands where a table function belongs: the function of
    ``FROM f(...)`` (a Table's name) or of ``LATERAL f(...)`` (not LATERAL VIEW)."""
    parent = node.parent
    if isinstance(parent, exp.Table) and parent.this is node:
        return True
    return isinstance(parent, exp.Lateral) and parent.this is node


def _check_function(qt, node: exp.Func, what: str) -> None:
    """A function node by its name: an Anonymous one's written name must be allowed (or
    a user function of the query's database); a
    typed one (sqlglot's class for a known function) must not be one of the refused
    built-ins under any of its names (``CURRENT_USER`` written without parentheses
    is one). What it emits is checked again by :func:`streamjob.policy.render`."""
    if isinstance(node, exp.Anonymous):
        names = {node.name.lower()}
        bad = {n for n in names if n not in ALLOWED_FUNCTIONS and n not in user_functions(qt)}
        if not bad and _user_table_function(qt, node) and not _table_place(node) \
                and not (isinstance(node.parent, exp.Lateral) and node.parent.args.get("view")):
            name = node.name.lower()
            raise qt.error(f"{name}() is a table function: it is called in FROM {name}(...) "
                           f"or LATERAL {name}(...), not as a value", qt.node_span(node))
    else:
        names = {n.lower() for n in type(node).sql_names()}
        bad = names & set(REFUSED)
    if bad:
        name = sorted(bad)[0]
        probe: exp.Expr | None = node
        span = None
        while probe is not None and span is None:
            span = qt.node_span(probe)
            probe = probe.parent
        raise function_error(name, what, span)


def _range(node: exp.Expr) -> tuple[int, int] | None:
    """The offsets of the first and last character sqlglot placed in ``node``."""
    metas = [n._meta for n in node.walk() if getattr(n, "_meta", None) and "start" in n._meta]
    if not metas:
        return None
    return min(m["start"] for m in metas), max(m["end"] for m in metas)


def _error(qt, node: exp.Expr, owner: exp.Expr, refusal, what: str,
           tokens: list[Token]) -> ValidationError:
    """The refusal placed at its keyword (one of ``keywords``: the first inside the
    owner's text, else the last before it, as TRANSFORM and OVERWRITE stand before their
    node's first name, else the first after), else at the node, else at its nearest
    placed ancestor."""
    message, keywords = refusal
    if keywords and tokens:
        span = _range(owner)
        low, high = span if span is not None else (0, 0)
        hits = [t for t in tokens if t.text.upper() in keywords or t.text[:3] in keywords]
        inside = [t for t in hits if low <= t.start <= high]
        before = [t for t in hits if t.start < low]
        after = [t for t in hits if t.start > high]
        best = inside[:1] or before[-1:] or after[:1]
        if best:
            return qt.error(message, qt.token_span(best[0]))
    probe: exp.Expr | None = node
    while probe is not None:
        span = qt.node_span(probe)
        if span is not None:
            return qt.error(message, span)
        probe = probe.parent
    return qt.error(message)


def _check_depth(qt, root: exp.Expr, what: str) -> None:
    stack = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_EXPRESSION_DEPTH:
            raise _error(qt, node, node, (
                f"the {what} nests its expressions more than {MAX_EXPRESSION_DEPTH} levels "
                "deep here; split it (e.g. into a derived stream) or flatten it "
                "(docs/reliability.md, limits)", ()), what, [])
        for child in node.iter_expressions():
            same_chain = (isinstance(node, exp.Binary) and isinstance(child, exp.Binary)
                          and child is node.this)
            stack.append((child, depth if same_chain else depth + 1))
