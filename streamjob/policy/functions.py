"""Which functions, and which function options, SQL that reaches Spark may use.

A job's query runs inside the job manager's Spark JVM, with its permissions. Spark's
built-ins include reflection (``java_method('java.lang.System', 'exit', 7)`` stopped
the job manager's JVM), functions whose options read files or fetch URLs, and
``IDENTIFIER('...')``, which names a function by a string. So a call is allowed only
when its name is in :data:`ALLOWED_FUNCTIONS`: the names of ``allowed_functions.txt``
(audited, one by one, against Spark's ``SHOW FUNCTIONS`` in ``spark_functions.txt``)
that are Spark built-ins. Every built-in that is not allowed is in :data:`REFUSED` with
the reason, shown in the error; ``tests/unit/test_sql_policy.py`` fails when a name of
``spark_functions.txt`` is in neither list, so a Spark upgrade's new functions stay
refused until someone audits them.

Options maps (:data:`OPTION_ARGUMENT`): ``from_json(x, schema, map('k', 'v', ...))``
and its siblings take a map of reader options, some of which open paths or hosts
(``rowValidationXSDPath`` of the XML reader, ``avroSchemaUrl``). Such an argument must be
a literal ``map('key', 'value', ...)`` whose keys are all in :data:`ALLOWED_OPTIONS`
(formats, parsing modes, quoting: nothing that names a file or a host).

Every call is checked as written, from the query's tokens (a name followed by ``(``,
backquoted or qualified as ``system.builtin.reflect`` alike), so sqlglot's rewriting of
names cannot hide one; :func:`streamjob.policy.render` checks the Spark SQL it emits
again. A refused or unknown name is a :class:`~streamjob.exceptions.ValidationError`
at its line and column in the script; an unknown one gets the nearest allowed name as
a suggestion. Regenerate ``spark_functions.txt`` after a Spark upgrade with
``python -m streamjob.policy.functions`` and audit the new names.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

from sqlglot.tokens import Token, TokenType

from ..exceptions import ValidationError
from ..nearest import nearest

__all__ = ["ALLOWED_FUNCTIONS", "ALLOWED_OPTIONS", "OPTION_ARGUMENT", "REFUSED",
           "SPARK_FUNCTIONS", "check_calls", "function_error", "user_functions"]

_REFLECTION = "it calls any Java method by reflection (e.g. System.exit) in the job manager's JVM"
_USER = "it tells the query the operating-system user the job manager runs as"

#: Spark built-ins a query may not call, and why (shown in the error).
REFUSED: dict[str, str] = {
    "java_method": _REFLECTION,
    "reflect": _REFLECTION,
    "try_reflect": _REFLECTION,
    "from_protobuf": "its descriptor-file argument reads files of the job manager's host",
    "to_protobuf": "its descriptor-file argument reads files of the job manager's host",
    "identifier": "it names a function or table by a string, which no check can see",
    "python_worker_logs": "it reads the logs of every Python worker of the job manager, "
                          "other jobs' included",
    "current_user": _USER,
    "session_user": _USER,
    "user": _USER,
}

#: Functions that take a map of reader/writer options, and the 0-based index of it.
OPTION_ARGUMENT: dict[str, int] = {
    "from_json": 2, "from_csv": 2, "from_xml": 2, "from_avro": 2,
    "schema_of_json": 1, "schema_of_csv": 1, "schema_of_xml": 1, "schema_of_avro": 1,
    "to_json": 1, "to_csv": 1, "to_xml": 1,
}

#: Option keys (lower case; Spark reads them case-insensitively) an options map may
#: hold: formats, parse modes, quoting and naming. None names a path, a URL or a host.
ALLOWED_OPTIONS: frozenset[str] = frozenset({
    # common
    "mode", "dateformat", "timestampformat", "timestampntzformat", "timezone", "locale",
    "columnnameofcorruptrecord", "dropfieldifallnull", "multiline", "linesep", "encoding",
    "charset", "samplingratio", "prefersdecimal", "primitivesasstring", "infertimestamp",
    "enabledatetimeparsingfallback", "datetimerebasemode", "pretty", "ignorenullfields",
    # JSON
    "allowcomments", "allowunquotedfieldnames", "allowsinglequotes",
    "allownumericleadingzeros", "allownonnumericnumbers", "allowbackslashescapinganycharacter",
    "allowunquotedcontrolchars", "writenonasciicharacterasCodepoint".lower(),
    # CSV
    "sep", "delimiter", "quote", "escape", "chartoescapequoteescaping", "comment", "header",
    "nullvalue", "nanvalue", "positiveinf", "negativeinf", "emptyvalue",
    "ignoreleadingwhitespace", "ignoretrailingwhitespace", "quoteall", "escapequotes",
    "unescapedquotehandling", "maxcolumns", "maxcharspercolumn", "enforceschema",
    "preferdate",
    # XML
    "rowtag", "roottag", "attributeprefix", "valuetag", "excludeattribute",
    "ignoresurroundingspaces", "ignorenamespace", "wildcardcolname", "arrayelementname",
    "declaration", "validatename", "saveemptystring",
    # Avro (the schema itself is a JSON text argument, never a location)
    "enablestableidentifiersforuniontype", "stableidentifierprefixforuniontype",
    "recursivefieldmaxdepth", "avroschema",
})

#: Token types that name a function when followed by "(".
_NAME_TOKENS = (TokenType.VAR, TokenType.IDENTIFIER)
#: A name after these is a table's column list, a CTE or a type, not a call.
_NOT_A_CALL_AFTER = (TokenType.INTO, TokenType.TABLE, TokenType.ALIAS)


def _names(filename: str) -> frozenset[str]:
    text = resources.files("streamjob.policy").joinpath(filename).read_text("utf-8")
    return frozenset(line.strip().lower() for line in text.splitlines()
                     if line.strip() and not line.startswith("#"))


@lru_cache(maxsize=1)
def _spark_functions() -> frozenset[str]:
    return _names("spark_functions.txt")


@lru_cache(maxsize=1)
def _allowed() -> frozenset[str]:
    return _names("allowed_functions.txt") & _spark_functions()


class _Names:
    """Lazy, read-only view of a name list (read on first use)."""

    def __init__(self, load) -> None:
        self._load = load

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._load()

    def __iter__(self):
        return iter(sorted(self._load()))

    def __len__(self) -> int:
        return len(self._load())


#: Spark SQL's built-in function names (lower case), from ``spark_functions.txt``.
SPARK_FUNCTIONS = _Names(_spark_functions)
#: The functions a query may call (lower case): ``allowed_functions.txt`` ∩ built-ins.
ALLOWED_FUNCTIONS = _Names(_allowed)


def _calls(tokens: list[Token]):
    """``(index, name)`` for each function call in ``tokens``: a name token, maybe
    closed by a backquote token (sqlglot's Hive tokenizer splits `` `f` ``), then ``(``;
    ``index`` is that ``(``'s."""
    for i, tok in enumerate(tokens):
        if tok.token_type not in _NAME_TOKENS:
            continue
        j = i + 1
        if j < len(tokens) and tokens[j].token_type == TokenType.UNKNOWN and tokens[j].text == "`":
            j += 1
        if j >= len(tokens) or tokens[j].token_type != TokenType.L_PAREN:
            continue
        k = i - 1
        if k >= 0 and tokens[k].token_type == TokenType.UNKNOWN and tokens[k].text == "`":
            k -= 1
        if k >= 0 and tokens[k].token_type in _NOT_A_CALL_AFTER:
            continue
        if k >= 0 and tokens[k].token_type == TokenType.R_PAREN and _names_only(tokens, j):
            continue  # ``f(x) t(a, b)``, ``(select ...) t(a)``: an alias with its columns
        yield i, j


def _names_only(tokens: list[Token], paren: int) -> bool:
    """True when the parentheses opened at ``tokens[paren]`` hold only a comma-separated
    list of plain names (a table alias's column list)."""
    args = _arguments(tokens, paren)
    return bool(args) and all(len(a) == 1 and a[0].token_type in _NAME_TOKENS for a in args)


def user_functions(qt) -> dict:
    """The user functions ``qt`` may call (lower-case name -> FunctionInfo): those of its
    database, registered by CREATE FUNCTION (docs/functions.md)."""
    return getattr(qt, "functions", None) or {}


def function_error(name: str, what: str, span=None, user=()) -> ValidationError:
    """The error for a call of ``name`` (not allowed): the reason when it is refused,
    else "unknown function" with the nearest allowed name or user function (``user``,
    names). ``span`` (a :class:`~streamjob.planner.text.Span` or None) places it."""
    lower = name.lower()
    line, column, text = (span.line, span.column, span.text) if span else (None, None, None)
    if lower in REFUSED:
        return ValidationError(
            f"function {lower}() is not allowed in a {what}: {REFUSED[lower]} "
            "(docs/security.md, sql-policy)", line=line, column=column, text=text)
    near = nearest(lower, [*ALLOWED_FUNCTIONS, *user], cutoff=0.75)
    hint = f"; did you mean {near}()?" if near else ""
    return ValidationError(
        f"unknown function {name}(): not a Spark SQL built-in function{hint}",
        line=line, column=column, text=text)


def check_calls(qt, tokens: list[Token] | None, what: str = "query") -> None:
    """Refuse a call of a function that is not allowed, or an options map that is not
    a literal map of allowed keys.

    Args:
        qt: the :class:`~streamjob.planner.text.QueryText` (for script positions).
        tokens: the query's sqlglot tokens (Hive dialect); None (untokenizable text)
            checks nothing, the parser reports that text.
        what: "query", "job's query", ... for the message.

    Raises:
        ValidationError: at the first offending name (the reason it is refused, or
            "unknown function" and the nearest allowed one) or options argument.
    """
    tokens = tokens or []
    user = user_functions(qt)
    for tok, nxt in zip(tokens, tokens[1:]):  # refused names the tokenizer keeps as keywords
        if nxt.token_type == TokenType.L_PAREN and tok.text.lower() in REFUSED:
            raise function_error(tok.text, what, qt.span(tok.start, tok.end))
    for i, paren in _calls(tokens):
        tok = tokens[i]
        lower = tok.text.lower()
        if lower in user and lower not in ALLOWED_FUNCTIONS and not _qualified(tokens, i):
            _check_arity(qt, tokens, i, paren, user[lower])
            continue
        if lower not in ALLOWED_FUNCTIONS:
            raise function_error(tok.text, what, qt.span(tok.start, tok.end), user)
        if lower in OPTION_ARGUMENT:
            _check_options(qt, tokens, paren, lower, OPTION_ARGUMENT[lower])


def _qualified(tokens: list[Token], i: int) -> bool:
    """True when the name at ``tokens[i]`` is written qualified (``x.f(...)``): a user
    function is called by its bare name only, as Spark's session registers it."""
    k = i - 1
    if k >= 0 and tokens[k].token_type == TokenType.UNKNOWN and tokens[k].text == "`":
        k -= 1
    return k >= 0 and tokens[k].token_type == TokenType.DOT


def _check_arity(qt, tokens: list[Token], i: int, paren: int, fn) -> None:
    """A user function's call against its registered parameters (``fn.parameters``;
    None: any number).

    Raises:
        ValidationError: another number of arguments, at the function's name.
    """
    if fn.parameters is None:
        return
    given = len(_arguments(tokens, paren))
    if given != len(fn.parameters):
        tok = tokens[i]
        where = qt.span(tok.start, tok.end)
        want = len(fn.parameters)
        raise ValidationError(
            f"function {fn.name}({', '.join(fn.parameters)}) takes {want} argument"
            f"{'' if want == 1 else 's'}, not {given} ({fn.source}; DESCRIBE FUNCTION "
            f"{fn.name})", line=where.line, column=where.column, text=where.text)


def _arguments(tokens: list[Token], paren: int) -> list[list[Token]]:
    """The arguments (token lists) of the call whose ``(`` is ``tokens[paren]``."""
    args: list[list[Token]] = [[]]
    depth = 0
    for tok in tokens[paren + 1:]:
        t = tok.token_type
        if t in (TokenType.L_PAREN, TokenType.L_BRACKET):
            depth += 1
        elif t in (TokenType.R_PAREN, TokenType.R_BRACKET):
            if depth == 0:
                break
            depth -= 1
        elif t == TokenType.COMMA and depth == 0:
            args.append([])
            continue
        args[-1].append(tok)
    return args if args != [[]] else []


def _check_options(qt, tokens: list[Token], paren: int, name: str, index: int) -> None:
    args = _arguments(tokens, paren)
    if len(args) <= index or not args[index]:
        return
    arg = args[index]
    span = qt.span(arg[0].start, arg[-1].end)
    form = (f"the options of {name}() must be a literal map('key', 'value', ...) "
            f"(docs/security.md, sql-policy)")
    if len(arg) < 3 or arg[0].text.lower() != "map" or arg[1].token_type != TokenType.L_PAREN \
            or arg[-1].token_type != TokenType.R_PAREN:
        raise ValidationError(form, line=span.line, column=span.column, text=span.text)
    inner = arg[2:-1]
    values = inner[0::2]
    commas = inner[1::2]
    if any(t.token_type != TokenType.STRING for t in values) or len(values) % 2 \
            or any(c.token_type != TokenType.COMMA for c in commas):
        raise ValidationError(form, line=span.line, column=span.column, text=span.text)
    for key in values[0::2]:
        if key.text.lower() not in ALLOWED_OPTIONS:
            where = qt.span(key.start, key.end)
            raise ValidationError(
                f"option '{key.text}' of {name}() is not allowed: only format and parsing "
                f"options are (none may name a file, a URL or a host; docs/security.md, "
                f"sql-policy)", line=where.line, column=where.column, text=where.text)


def _regenerate() -> None:  # pragma: no cover - a maintenance command
    """Write spark_functions.txt from the installed Spark's ``SHOW FUNCTIONS``."""
    from pathlib import Path

    from pyspark.sql import SparkSession

    spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
    names = sorted({r[0] for r in spark.sql("SHOW FUNCTIONS").collect()})
    header = (f"# Spark SQL's built-in functions (SHOW FUNCTIONS of Spark {spark.version}): "
              "each must be in\n# allowed_functions.txt or in REFUSED (streamjob/policy/"
              "functions.py). Regenerate: python -m streamjob.policy.functions\n")
    Path(__file__).with_name("spark_functions.txt").write_text(header + "\n".join(names) + "\n")
    spark.stop()


if __name__ == "__main__":  # pragma: no cover
    _regenerate()
