"""Every column a query names, resolved against the declared columns of what it reads.

Names compare case-insensitively. A select's FROM/JOIN items (streams and tables of the
catalog, CTEs, subqueries, lateral views) are its sources; a column ``x`` must be a
column of exactly one of them (or of an enclosing select's, for a correlated subquery),
``q.x`` a column of the source named or aliased ``q``. CTEs and subqueries resolve
through their own select lists. Select-list aliases may be used where Spark allows them:
later in the select list (lateral aliases), in GROUP BY, HAVING, ORDER BY / SORT BY /
CLUSTER BY / DISTRIBUTE BY and QUALIFY, never in WHERE or ON. Functions are not checked.

``*`` and ``q.*`` are expanded in place to the declared columns, so the select list's
names and count are known before Spark sees the query. A source whose columns cannot
be known (a table function, VALUES, a subquery with unnamed expressions) accepts any
name, and a ``*`` over it is left alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from .text import QueryText
from ..columntypes import struct_fields
from ..nearest import nearest


@dataclass(frozen=True)
class CatalogSource:
    """A catalog object a FROM/JOIN table resolved to: ``kind`` (stream or table),
    ``database``, ``name`` and its ``columns`` (``{"name", "type"}`` dicts)."""

    kind: str
    database: str
    name: str
    columns: tuple[dict, ...]


@dataclass(frozen=True)
class OutputColumn:
    """One column of a select list: ``name`` (lower case; None for an unnamed expression),
    ``type`` (the declared type when it passes a source column through, a user
    function's RETURNS type for its call, else None) and
    the select ``node``."""

    name: str | None
    type: str | None
    node: exp.Expr


@dataclass
class _Source:
    alias: str
    label: str
    short: str
    columns: list[str] | None
    types: dict[str, str]
    ref: tuple[str, str] | None = None


@dataclass
class _Env:
    parent: "_Env | None"
    sources: list[_Source] = field(default_factory=list)
    using: set[str] = field(default_factory=set)

    def find(self, alias: str) -> _Source | None:
        env = self
        while env is not None:
            for s in env.sources:
                if s.alias == alias:
                    return s
            env = env.parent
        return None

    def has_column(self, name: str) -> bool:
        return any(s.columns is not None and name in s.columns for s in self.sources)


_ALIAS_CLAUSES = ("group", "having", "order", "sort", "cluster", "distribute", "qualify")


class ColumnResolver:
    """Resolves and checks the columns of one query tree.

    Args:
        qt: the query text (for error positions).
        tables: ``id(exp.Table node) -> CatalogSource`` for every catalog reference.
        pseudo: names valid without a source, e.g. ``{"window"}`` in a windowed query
            (the struct Spark's ``window(...)`` grouping produces).

    :meth:`resolve` raises ValidationError for an unknown column (with the source's
    columns, or the sources it is not in, and a "did you mean"), an ambiguous column,
    or an unknown table or alias qualifier, at the column's position in the script.
    """

    def __init__(self, qt: QueryText, tables: dict[int, CatalogSource], pseudo=frozenset()):
        self.qt = qt
        self.tables = tables
        self.pseudo = set(pseudo)
        self.arity_known = True

    def resolve(self, query: exp.Expr) -> list[OutputColumn] | None:
        """Check ``query`` (a Select, a set operation or a Subquery) and expand its stars;
        returns its output columns (None when they cannot be known)."""
        return self._query(query, None, {})

    # -- queries -----------------------------------------------------------------

    def _query(self, node, outer: _Env | None, ctes: dict) -> list[OutputColumn] | None:
        if isinstance(node, exp.Subquery):
            return self._query(node.this, outer, ctes)
        ctes = dict(ctes)
        with_ = node.args.get("with_") or node.args.get("with")
        if with_ is not None:
            for cte in with_.expressions:
                outs = _renamed(self._query(cte.this, outer, ctes), cte.args.get("alias"))
                ctes[cte.alias_or_name.lower()] = outs
        if isinstance(node, exp.SetOperation):
            left = self._query(node.left, outer, ctes)
            right = self._query(node.right, outer, ctes)
            if left is not None and right is not None and len(left) != len(right):
                op = type(node).__name__.upper()
                raise self.qt.error(f"the two sides of {op} give {len(left)} and {len(right)} "
                                    f"columns", self.qt.node_span(node.right))
            return left
        if not isinstance(node, exp.Select):
            return None
        return self._select(node, outer, ctes)

    def _select(self, node: exp.Select, outer: _Env | None, ctes: dict) -> list[OutputColumn]:
        env = _Env(outer)
        from_ = node.args.get("from_") or node.args.get("from")
        if from_ is not None:
            self._add_source(env, from_.this, ctes)
        joins = node.args.get("joins") or []
        for j in joins:
            self._add_source(env, j.this, ctes)
        for lateral in node.args.get("laterals") or []:
            self._check(lateral.this, env, ctes, None)
            alias = lateral.args.get("alias")
            cols = [c.name.lower() for c in alias.columns] if alias is not None and alias.columns \
                else ["col"]
            env.sources.append(_Source(lateral.alias.lower(), f"lateral view {lateral.alias}",
                                       lateral.alias, cols, {}))
        for j in joins:
            if j.args.get("on") is not None:
                self._check(j.args["on"], env, ctes, None)
            for ident in j.args.get("using") or []:
                name = ident.name.lower()
                if not env.has_column(name) and all(s.columns is not None for s in env.sources):
                    raise self._unknown(name, env.sources, self.qt.node_span(ident), set())
                env.using.add(name)

        outputs: list[OutputColumn] = []
        expressions: list[exp.Expr] = []
        expanded = False
        for e in node.expressions:
            star_of = None
            if isinstance(e, exp.Star):
                star_of = env.sources
            elif isinstance(e, exp.Column) and isinstance(e.this, exp.Star):
                src = env.find(e.table.lower()) if e.table else None
                if src is None or all(src is not s for s in env.sources):
                    raise self.qt.error(f"unknown table or alias '{e.table}'",
                                        self.qt.node_span(e.args.get("table")))
                star_of = [src]
            if star_of is not None and all(s.columns is not None for s in star_of):
                qualify = len(env.sources) > 1 or isinstance(e, exp.Column)
                where = _offsets(e)
                for s in star_of:
                    for c in s.columns:
                        col = exp.column(c, table=s.alias if qualify else None, quoted=None)
                        if where:  # errors about the expanded list point at the star
                            col.meta.update(start=where[0], end=where[1])
                        expressions.append(col)
                        outputs.append(OutputColumn(c, s.types.get(c), col))
                expanded = True
                continue
            if star_of is not None:
                self.arity_known = False
                expressions.append(e)
                outputs.append(OutputColumn(None, None, e))
                continue
            self._check(e, env, ctes, {o.name for o in outputs if o.name})
            expressions.append(e)
            outputs.append(OutputColumn(_output_name(e), self._passed_type(e, env), e))
        if expanded:
            node.set("expressions", expressions)

        if node.args.get("where") is not None:
            self._check(node.args["where"], env, ctes, None)
        aliases = {o.name for o in outputs if o.name}
        for key in _ALIAS_CLAUSES:
            if node.args.get(key) is not None:
                self._check(node.args[key], env, ctes, aliases)
        return outputs

    def _add_source(self, env: _Env, item: exp.Expr, ctes: dict) -> None:
        alias = (item.alias_or_name or "").lower()
        if isinstance(item, exp.Table):
            info = self.tables.get(id(item))
            if info is not None:
                cols = [c["name"].lower() for c in info.columns]
                types = {c["name"].lower(): c["type"] for c in info.columns}
                qname = f"{info.database}.{info.name}"
                src = _Source(alias, f"{info.kind} {qname}", qname, cols, types,
                              (info.database, info.name))
            elif not item.db and item.name.lower() in ctes:
                outs = ctes[item.name.lower()]
                src = _from_outputs(alias, f"cte {item.name}", outs)
            else:
                src = _Source(alias, alias, alias, None, {})
            src = _aliased(src, item.args.get("alias"))
        elif isinstance(item, exp.Subquery):
            outs = _renamed(self._query(item.this, None, ctes), item.args.get("alias"))
            src = _from_outputs(alias, f"subquery {alias}" if alias else "subquery", outs)
        elif self._table_function(item) is not None:
            src = self._table_function_source(env, item, alias, ctes)
        else:
            src = _Source(alias, alias, alias, None, {})
        if alias and any(s.alias == alias for s in env.sources):
            raise self.qt.error(f"the name '{alias}' is given to two tables in FROM; give one "
                                f"another alias", self.qt.node_span(item.args.get("alias")))
        env.sources.append(src)

    # -- columns -----------------------------------------------------------------

    def _check(self, expr: exp.Expr, env: _Env, ctes: dict, aliases: set[str] | None) -> None:
        if isinstance(expr, (exp.Subquery, exp.Query)):
            self._query(expr, env, ctes)
            return
        nested = (exp.Subquery, exp.Query)
        for n in expr.walk(prune=lambda n: n is not expr and isinstance(n, nested)):
            if n is not expr and isinstance(n, nested):
                self._query(n, env, ctes)
            elif type(n) is exp.Column and not isinstance(n.this, exp.Star):
                self._column(n, env, aliases)

    def _column(self, col: exp.Column, env: _Env, aliases: set[str] | None) -> None:
        name, table, db = col.name.lower(), col.table.lower(), col.text("db").lower()
        if db:
            src = env.find(db)
            if src is not None:  # alias.struct_column.field
                self._in_source(table, src, col.args.get("table"))
                return
            refs = [s for s in env.sources if s.ref == (db, table)]
            if refs:  # database.table.column
                self._in_source(name, refs[0], col.this)
                col.set("db", None)
                col.set("table", exp.to_identifier(refs[0].alias))
                return
            if env.has_column(db):
                return
            raise self.qt.error(f"unknown table or alias '{db}.{table}'",
                                self.qt.node_span(col.args.get("db")))
        if table:
            src = env.find(table)
            if src is None:
                if table in self.pseudo or env.has_column(table):
                    return  # a struct's field, e.g. window.start
                raise self.qt.error(f"unknown table or alias '{table}'",
                                    self.qt.node_span(col.args.get("table")))
            self._in_source(name, src, col.this)
            return
        e, first = env, True
        while e is not None:
            matches = [s for s in e.sources if s.columns is not None and name in s.columns]
            if len(matches) > 1 and name not in e.using:
                shorts = [s.short for s in matches]
                where = _join([f"{s.alias} ({s.short})" if shorts.count(s.short) > 1 else s.short
                               for s in matches], "and")
                raise self.qt.error(f"column '{name}' is ambiguous: it is in {where}; qualify it",
                                    self.qt.node_span(col))
            if matches or any(s.columns is None for s in e.sources):
                return
            if first and aliases and name in aliases:
                return
            e, first = e.parent, False
        if name in self.pseudo:
            return
        raise self._unknown(name, env.sources, self.qt.node_span(col.this), aliases or set())

    def _table_function(self, item: exp.Expr):
        """The table function (FunctionInfo) ``item`` calls: ``LATERAL f(...)`` or
        ``FROM f(...)`` of a registered table function (docs/functions.md "Table
        functions"), else None."""
        call = item.this if isinstance(item, (exp.Lateral, exp.Table)) else None
        if not isinstance(call, exp.Anonymous):
            return None
        fn = self.qt.functions.get(call.name.lower())
        return fn if fn is not None and getattr(fn, "is_table", False) else None

    def _table_function_source(self, env: _Env, item: exp.Expr, alias: str,
                               ctes: dict) -> _Source:
        """The source of a table function's call: its arguments checked against the
        sources before it (a LATERAL call reads their columns), its columns and types
        those of RETURNS TABLE, renamed by ``AS t(a, b)``."""
        fn = self._table_function(item)
        for arg in item.this.expressions:
            self._check(arg, env, ctes, None)
        fields = struct_fields(fn.return_type or "")
        label = f"table function {fn.name}" + (f" {alias}" if alias else "")
        src = _Source(alias, label, alias or fn.name, [n for n, _ in fields], dict(fields))
        return _aliased(src, item.args.get("alias"))

    def _in_source(self, name: str, src: _Source, node: exp.Expr | None) -> None:
        if src.columns is None or name in src.columns:
            return
        raise self._unknown(name, [src], self.qt.node_span(node), set())

    def _unknown(self, name: str, sources: list[_Source], span, aliases: set[str]):
        candidates = [c for s in sources for c in (s.columns or [])] + sorted(aliases)
        if len(sources) == 1:
            src = sources[0]
            msg = f"unknown column '{name}' in {src.label} (columns: {', '.join(src.columns or [])})"
        elif sources:
            msg = f"unknown column '{name}': not a column of {_join([s.short for s in sources], 'or')}"
        else:
            msg = f"unknown column '{name}': the select reads no table"
        close = nearest(name, candidates)
        if close:
            msg += f"; did you mean '{close}'?"
        return self.qt.error(msg, span)

    def _passed_type(self, e: exp.Expr, env: _Env) -> str | None:
        inner = e.this if isinstance(e, exp.Alias) else e
        if isinstance(inner, exp.Anonymous):  # a user function's RETURNS
            fn = self.qt.functions.get(inner.name.lower())
            return fn.return_type if fn is not None else None
        if type(inner) is not exp.Column or inner.text("db"):
            return None
        name, table = inner.name.lower(), inner.table.lower()
        srcs = [env.find(table)] if table else [s for s in env.sources
                                                if s.columns is not None and name in s.columns]
        for s in srcs:
            if s is not None and name in s.types:
                return s.types[name]
        return None


def _offsets(node: exp.Expr) -> tuple[int, int] | None:
    metas = [m for m in (getattr(n, "_meta", None) for n in node.walk()) if m and "start" in m]
    return (min(m["start"] for m in metas), max(m["end"] for m in metas)) if metas else None


def _output_name(e: exp.Expr) -> str | None:
    if isinstance(e, exp.Alias):
        return e.alias.lower() or None
    if type(e) is exp.Column:
        return e.name.lower() or None
    return None


def _from_outputs(alias: str, label: str, outs: list[OutputColumn] | None) -> _Source:
    if outs is None or any(o.name is None for o in outs):
        return _Source(alias, label, alias, None, {})
    return _Source(alias, label, alias, [o.name for o in outs],
                   {o.name: o.type for o in outs if o.type})


def _renamed(outs: list[OutputColumn] | None, alias) -> list[OutputColumn] | None:
    """Apply a ``name(c1, c2)`` alias's column list to a query's outputs."""
    if outs is None or not isinstance(alias, exp.TableAlias) or not alias.columns:
        return outs
    names = [c.name.lower() for c in alias.columns]
    return [OutputColumn(names[i] if i < len(names) else o.name, o.type, o.node)
            for i, o in enumerate(outs)]


def _aliased(src: _Source, alias) -> _Source:
    if src.columns is None or not isinstance(alias, exp.TableAlias) or not alias.columns:
        return src
    names = [c.name.lower() for c in alias.columns]
    cols = [names[i] if i < len(names) else c for i, c in enumerate(src.columns)]
    types = {n: src.types[c] for n, c in zip(cols, src.columns) if c in src.types}
    return _Source(src.alias, src.label, src.short, cols, types, src.ref)


def _join(items: list[str], word: str) -> str:
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} {word} {items[-1]}"
