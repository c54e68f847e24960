"""Which functions a job's query may call (DESIGN §9, issue 13 point 8).

A job's query runs inside the job manager's Spark JVM, with its permissions. Spark's
built-ins include reflection (``java_method('java.lang.System', 'exit', 7)`` stopped
the job manager's JVM) and functions that read local files, and ``IDENTIFIER('...')``
names a function by a string. So a query may call only:

* Spark SQL's built-in functions (:data:`SPARK_FUNCTIONS`, the ``SHOW FUNCTIONS`` of
  the Spark release named in ``spark_functions.txt``), minus
* :data:`DENIED`, each with the reason it is denied.

Every call is checked as written, from the query's tokens (a name followed by ``(``,
backquoted or qualified as ``system.builtin.reflect`` alike), so sqlglot's rewriting of
names cannot hide one. A denied or unknown name is a
:class:`~streamjob.exceptions.ValidationError` at its line and column in the script;
an unknown one gets the nearest built-in as a suggestion. Regenerate the list after a
Spark upgrade with ``python -m streamjob.planner.functions``.
"""

from __future__ import annotations

import difflib
from functools import lru_cache
from importlib import resources

from sqlglot.tokens import Token, TokenType

from ..exceptions import ValidationError

__all__ = ["DENIED", "SPARK_FUNCTIONS", "check_calls"]

#: Spark built-ins a job may not call, and why (shown in the error).
DENIED: dict[str, str] = {
    "java_method": "it calls any Java method by reflection (e.g. System.exit) in the job manager's JVM",
    "reflect": "it calls any Java method by reflection (e.g. System.exit) in the job manager's JVM",
    "try_reflect": "it calls any Java method by reflection (e.g. System.exit) in the job manager's JVM",
    "from_protobuf": "its descriptor-file argument reads files of the job manager's host",
    "to_protobuf": "its descriptor-file argument reads files of the job manager's host",
    "identifier": "it names a function or table by a string, which no check can see",
}

#: Token types that name a function when followed by "(".
_NAME_TOKENS = (TokenType.VAR, TokenType.IDENTIFIER)
#: A name after these is a table's column list, a CTE or a type, not a call.
_NOT_A_CALL_AFTER = (TokenType.INTO, TokenType.TABLE, TokenType.ALIAS)


@lru_cache(maxsize=1)
def _spark_functions() -> frozenset[str]:
    text = resources.files("streamjob.planner").joinpath("spark_functions.txt").read_text("utf-8")
    return frozenset(line.strip().lower() for line in text.splitlines()
                     if line.strip() and not line.startswith("#"))


class _Functions:
    """Lazy view of the allowlist file (read on first use)."""

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in _spark_functions()

    def __iter__(self):
        return iter(sorted(_spark_functions()))


#: Spark SQL's built-in function names (lower case), from ``spark_functions.txt``.
SPARK_FUNCTIONS = _Functions()


def _calls(tokens: list[Token]):
    """``(name_token, name)`` for each function call in ``tokens``: a name token, maybe
    closed by a backquote token (sqlglot's Hive tokenizer splits `` `f` ``), then ``(``."""
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
        yield tok, tok.text


def check_calls(qt, tokens: list[Token] | None, what: str = "query") -> None:
    """Refuse a call of a denied or unknown function in a query.

    Args:
        qt: the :class:`~streamjob.planner.text.QueryText` (for script positions).
        tokens: the query's sqlglot tokens (Hive dialect); None (untokenizable text)
            checks nothing, the parser reports that text.
        what: "query", "job's query", ... for the message.

    Raises:
        ValidationError: at the first offending name, with the reason it is denied, or
            "unknown function" and the nearest built-in.
    """
    for tok, name in _calls(tokens or []):
        lower = name.lower()
        span = qt.span(tok.start, tok.end)
        if lower in DENIED:
            raise ValidationError(
                f"function {lower}() is not allowed in a {what}: {DENIED[lower]} "
                "(docs/reliability.md, function policy)",
                line=span.line, column=span.column, text=span.text)
        if lower not in SPARK_FUNCTIONS:
            near = difflib.get_close_matches(lower, list(SPARK_FUNCTIONS), n=1, cutoff=0.75)
            hint = f"; did you mean {near[0]}()?" if near else ""
            raise ValidationError(
                f"unknown function {name}(): not a Spark SQL built-in function{hint}",
                line=span.line, column=span.column, text=span.text)


def _regenerate() -> None:  # pragma: no cover - a maintenance command
    """Write spark_functions.txt from the installed Spark's ``SHOW FUNCTIONS``."""
    from pathlib import Path

    from pyspark.sql import SparkSession

    spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
    names = sorted({r[0] for r in spark.sql("SHOW FUNCTIONS").collect()})
    header = (f"# Spark SQL's built-in functions (SHOW FUNCTIONS of Spark {spark.version}), the base "
              "of the job-query\n# function allowlist (streamjob/planner/functions.py). Regenerate: "
              "python -m streamjob.planner.functions\n")
    Path(__file__).with_name("spark_functions.txt").write_text(header + "\n".join(names) + "\n")
    spark.stop()


if __name__ == "__main__":  # pragma: no cover
    _regenerate()
