"""The SQL policy: the one gate between a user's SQL text and Spark (DESIGN §9,
docs/security.md section "sql-policy").

Whatever of a script Spark is given to parse (a job's query, a derived stream's select,
a SESSIONWINDOW INIT/END condition, a shell preview, the plans of EXPLAIN and
``check``) is read here first and emitted here as :class:`~.checked.CheckedSQL`, the only
text :mod:`streamjob.spark.guard` hands to ``spark.sql``/``F.expr``:

1. :func:`check_text` before sqlglot parses it: its size (:data:`MAX_QUERY_CHARS`), NUL
   characters, nesting of ``( [ CASE`` and of NOT/unary-minus chains
   (:data:`MAX_NESTING`), and every function call as written against the function
   allowlist with its options maps (:mod:`.functions`);
2. :func:`check_tree` after: every node type and part against the allowlist
   (:mod:`.nodes`), table-valued functions and clauses the planner cannot honour
   refused, the tree's depth bounded;
3. :func:`render`, after the planner's rewrites: the tree checked again, emitted as
   Spark SQL without comments, sqlglot refusing what Spark cannot express, and the
   emitted text's function names checked once more.

``spark.sql.*`` settings (SET, JOBPROPERTIES) have their own allowlist,
:mod:`.settings`. Every refusal is a :class:`~streamjob.exceptions.ValidationError`
at the line and column of the offending text in the script.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ErrorLevel, ParseError, TokenError, UnsupportedError
from sqlglot.tokens import Token, Tokenizer, TokenType

from ..exceptions import ValidationError
from ..grammar.limits import MAX_EXPRESSION_DEPTH, MAX_NESTING, MAX_QUERY_CHARS
from .checked import CheckedSQL, mint
from .functions import (REFUSED, ALLOWED_FUNCTIONS, _calls, check_calls, function_error,
                        user_functions)
from .nodes import check_tree

__all__ = ["CheckedSQL", "MAX_EXPRESSION_DEPTH", "MAX_NESTING", "MAX_QUERY_CHARS",
           "check_text", "check_tree", "parse_expression", "render", "render_expression"]

_OPEN = {TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.L_BRACE, TokenType.CASE}
_CLOSE = {TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.R_BRACE, TokenType.END}
_PREFIX = {TokenType.NOT, TokenType.DASH, TokenType.PLUS, TokenType.TILDE, TokenType.EXCLAMATION}


def tokens_of(text: str, dialect: str = "hive") -> list[Token] | None:
    """sqlglot's tokens of ``text``, or None when it cannot be tokenized (the parser then
    reports the error at its place)."""
    try:
        return Tokenizer(dialect=dialect).tokenize(text)
    except (TokenError, Exception):  # noqa: BLE001
        return None


def check_text(qt, text: str, what: str, calls: bool = True) -> list[Token] | None:
    """Step 1 of the policy: ``text`` (the query of ``qt``, maybe with same-length
    rewrites) before any recursive parser reads it. ``calls=False`` leaves the function
    calls to a later call (the query as written, before StreamSQL's own clauses, such as
    ``SESSIONWINDOW(...)``, are cut out of it and their conditions read apart).

    Returns:
        its tokens (None when sqlglot cannot tokenize it: the parser reports why).

    Raises:
        ValidationError: a query longer than :data:`MAX_QUERY_CHARS`, a NUL character,
            nesting deeper than :data:`MAX_NESTING` (parentheses, brackets, CASE, or a
            run of NOT / unary operators), a function that is not allowed or an options
            map that is not a literal map of allowed keys; each at its place.
    """
    if len(text) > MAX_QUERY_CHARS:
        raise qt.error(f"the {what} is longer than {MAX_QUERY_CHARS:,} characters; split it "
                       "(e.g. into derived streams) or shorten its comments",
                       qt.span(MAX_QUERY_CHARS, MAX_QUERY_CHARS))
    nul = text.find("\x00")
    if nul >= 0:
        raise qt.error(f"a NUL character (\\x00) is not allowed in a {what}; write '\\0' or "
                       "chr(0) if a value needs one", qt.span(nul, nul))
    tokens = tokens_of(text)
    if tokens is None:
        return None
    depth, run = 0, 0
    for tok in tokens:
        t = tok.token_type
        if t in _OPEN:
            depth += 1
        elif t in _CLOSE:
            depth = max(0, depth - 1)
        run = run + 1 if t in _PREFIX else 0
        if t in _OPEN or t in _PREFIX:
            if depth + run > MAX_NESTING:
                raise qt.error(
                    f"the {what} nests expressions (parentheses, [ ], CASE, NOT or unary "
                    f"operators) more than {MAX_NESTING} levels deep here; split it (e.g. "
                    "into a derived stream) or flatten it (docs/reliability.md, limits)",
                    qt.token_span(tok))
        if t == TokenType.SEMICOLON:
            depth = 0
    _refuse_map_reduce(qt, tokens)
    if calls:
        check_calls(qt, tokens, what)
    return tokens


def _refuse_map_reduce(qt, tokens: list[Token]) -> None:
    """Hive's ``MAP ... USING 'cmd'`` / ``REDUCE ... USING 'cmd'`` (script transforms,
    which sqlglot cannot read: a bare syntax error otherwise) refused by name."""
    for i, tok in enumerate(tokens):
        word = tok.text.upper()
        if word not in ("MAP", "REDUCE"):
            continue
        if i + 1 < len(tokens) and tokens[i + 1].token_type == TokenType.L_PAREN:
            continue  # map(...) the function
        using = next((j for j in range(i + 1, len(tokens))
                      if tokens[j].token_type == TokenType.SEMICOLON
                      or tokens[j].text.upper() == "USING"), None)
        if using is not None and tokens[using].text.upper() == "USING" \
                and using + 1 < len(tokens) and tokens[using + 1].token_type == TokenType.STRING:
            raise qt.error(f"a script transform ({word} ... USING '<command>') is not allowed: "
                           "Spark runs the command as a process of the job manager's host",
                           qt.token_span(tok))


def render(qt, tree: exp.Expr, what: str) -> CheckedSQL:
    """Step 3: ``tree`` (parsed from ``qt`` and checked, then rewritten by the planner)
    as Spark SQL, marked as checked.

    The tree is checked again (the planner's rewrites included), emitted without comments
    (a comment re-emitted as ``/* ... */`` could close early) and with sqlglot refusing
    anything it cannot express in Spark SQL, and the emitted text's calls are checked
    against the function allowlist once more.

    Raises:
        ValidationError: as :func:`check_tree`; a node sqlglot cannot emit for Spark, or
            an emitted call that is not allowed, at the query's start.
    """
    check_tree(qt, [tree], what, None)
    try:
        text = tree.sql(dialect="spark", comments=False, unsupported_level=ErrorLevel.RAISE)
    except UnsupportedError as exc:
        raise qt.error(f"the {what} uses what Spark SQL cannot express: {exc}") from None
    except RecursionError:
        raise qt.error(f"the {what} nests its expressions too deeply to plan; split it "
                       "(docs/reliability.md, limits)") from None
    tokens = tokens_of(text, "spark") or []
    user = user_functions(qt)
    for i, _ in _calls(tokens):
        if tokens[i].text.lower() not in ALLOWED_FUNCTIONS and tokens[i].text.lower() not in user:
            raise function_error(tokens[i].text, what, qt.start(), user)
    for tok in tokens:  # niladic built-ins the tokenizer keeps as keywords (CURRENT_USER)
        if tok.text.lower() in REFUSED and tok.token_type not in (TokenType.STRING,
                                                                  TokenType.IDENTIFIER):
            raise function_error(tok.text, what, qt.start())
    return mint(text)


def parse_expression(qt, masked: str, what: str) -> exp.Expr:
    """Read one boolean expression (a SESSIONWINDOW INIT/END or PATTERN condition)
    through steps 1 and 2: ``masked`` is the query's text with everything but the
    expression blanked (same length, newlines kept), so positions are the query's.

    Raises:
        ValidationError: as :func:`check_text` and :func:`check_tree`; a syntax error at
            its place ("the condition is not a valid SQL expression").
    """
    tokens = check_text(qt, masked, what)
    try:
        statements = Dialect.get_or_raise("hive").parser().parse(
            Dialect.get_or_raise("hive").tokenize(masked), masked)
    except (ParseError, TokenError) as exc:
        errors = getattr(exc, "errors", None) or [{}]
        line, col = errors[0].get("line"), errors[0].get("col")
        span = None
        if line and col:
            lines = masked.split("\n")
            off = sum(len(x) + 1 for x in lines[:line - 1]) + max(0, col - 1)
            span = qt.span(off, off)
        start = len(masked) - len(masked.lstrip())
        raise qt.error(f"the {what} is not a valid SQL expression",
                       span or qt.span(start, start)) from None
    except RecursionError:
        start = len(masked) - len(masked.lstrip())
        raise qt.error(f"the {what} nests its expressions too deeply to plan",
                       qt.span(start, start)) from None
    statements = [s for s in statements if s is not None]
    if len(statements) != 1:
        start = len(masked) - len(masked.lstrip())
        raise qt.error(f"the {what} must be one SQL expression", qt.span(start, start))
    tree = statements[0]
    if isinstance(tree, (exp.Query, exp.Insert, exp.Command)) or not isinstance(
            tree, exp.Condition):
        raise qt.error(f"the {what} must be a SQL expression, not a statement",
                       qt.node_span(tree))
    sub = next(tree.find_all(exp.Query, exp.Subquery), None)
    if sub is not None:  # it would read other tables and views of the job's session
        word = next((t for t in tokens or [] if t.token_type == TokenType.SELECT), None)
        raise qt.error(f"the {what} reads only its stream's columns: no subqueries",
                       qt.token_span(word) if word else qt.node_span(tree))
    check_tree(qt, [tree], what, tokens)
    return tree


def render_expression(qt, tree: exp.Expr, what: str) -> CheckedSQL:
    """An expression read by :func:`parse_expression` (and rewritten) as checked Spark
    SQL; as :func:`render`."""
    return render(qt, tree, what)
