"""The builder methods of CREATE / DROP / SHOW / DESCRIBE FUNCTION (issue 31), mixed into
:class:`~streamjob.grammar.transform.Builder` (kept apart, like their grammar rules)."""

from __future__ import annotations

import re

from lark import Token, Tree

from streamjob.grammar.lexical import ident_value, unescape_string
from streamjob.grammar.statements import (
    CreateFunction,
    DescribeFunction,
    DropFunction,
    ShowFunctions,
)

__all__ = ["FunctionsBuilder"]

#: A Java class name (Hive's ``CREATE FUNCTION f AS 'com.x.Udf'``).
_JAVA_CLASS = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+")

#: The languages of CREATE FUNCTION (Flink's ``LANGUAGE``; Python is the default).
LANGUAGES = ("python",)


class FunctionsBuilder:
    """Builder methods (``_<rule>``) of the function statements; uses the Builder's
    ``name``, ``find``, ``position``, ``error``, ``type_text`` and ``locations``."""

    def _create_function(self, tree: Tree):
        token = next(c for c in tree.children if isinstance(c, Token) and c.type == "STRING")
        self.locations["value:source"] = self.position(token.start_pos)
        source = unescape_string(token.value).strip()
        if not source:
            raise self.error("the function's source is empty: write 'package.module:callable'",
                             token.start_pos, token.value)
        if ":" not in source and _JAVA_CLASS.fullmatch(source):
            raise self.error(
                f"'{source}' names a Java (Hive) UDF class; Hive UDF jars are not supported "
                "yet: write the function in Python and name it as 'module:callable' "
                "(docs/functions.md)", token.start_pos, token.value)
        returns = self.find(tree, "function_returns")
        if returns is not None:
            self.locations["value:returns"] = self.position(returns.children[0].meta.start_pos)
        language = "python"
        lang = self.find(tree, "function_language")
        if lang is not None:
            word = lang.children[0].children[0]
            language = ident_value(word).lower()
            self.locations["value:language"] = self.position(word.start_pos)
            if language not in LANGUAGES:
                raise self.error(f"LANGUAGE {ident_value(word)} is not supported: a function "
                                 "is written in Python (LANGUAGE PYTHON, the default)",
                                 word.start_pos, word.value)
        return CreateFunction, dict(
            name=self.name(self.find(tree, "qualified_name")), source=source,
            returns=self.type_text(returns.children[0]) if returns is not None else None,
            language=language, temporary=self.find(tree, "function_temporary") is not None,
            if_not_exists=self.find(tree, "if_not_exists") is not None)

    def _drop_function(self, tree: Tree):
        return DropFunction, dict(name=self.name(self.find(tree, "qualified_name")),
                                  if_exists=self.find(tree, "if_exists") is not None)

    def _show_functions(self, tree: Tree):
        return ShowFunctions, {}

    def _describe_function(self, tree: Tree):
        return DescribeFunction, dict(name=self.name(self.find(tree, "qualified_name")))
