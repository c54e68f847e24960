"""The builder methods of CREATE / DROP / SHOW / DESCRIBE FUNCTION (issue 31), mixed into
:class:`~streamjob.grammar.transform.Builder` (kept apart, like their grammar rules)."""

from __future__ import annotations

from lark import Token, Tree

from streamjob.grammar.lexical import ident_value, is_java_class, unescape_string
from streamjob.grammar.statements import (
    AddJar,
    CreateFunction,
    DescribeFunction,
    DropFunction,
    ShowFunctions,
)

__all__ = ["FunctionsBuilder"]

#: The languages of CREATE FUNCTION (Flink's ``LANGUAGE``; Python is the default, Java
#: the language of a Hive UDF class).
LANGUAGES = ("python", "java")


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
        java = is_java_class(source)
        returns = self.find(tree, "function_returns")
        table: list[tuple[str, str]] = []
        if returns is not None:
            self.locations["value:returns"] = self.position(returns.children[0].meta.start_pos)
            if returns.children[0].data == "function_table":
                for column in returns.children[0].children:
                    word = column.children[0].children[0]
                    name = ident_value(word).lower()
                    if any(name == n for n, _ in table):
                        raise self.error(f"column {name} appears twice in RETURNS TABLE",
                                         word.start_pos, word.value)
                    table.append((name, self.type_text(column.children[1])))
                returns = None
        language = "java" if java else "python"
        lang = self.find(tree, "function_language")
        if lang is not None:
            word = lang.children[0].children[0]
            written = ident_value(word).lower()
            self.locations["value:language"] = self.position(word.start_pos)
            if written not in LANGUAGES:
                raise self.error(f"LANGUAGE {ident_value(word)} is not supported: a function "
                                 "is Python (LANGUAGE PYTHON, the default) or a Hive UDF "
                                 "class in a jar (LANGUAGE JAVA)", word.start_pos, word.value)
            if written != language:
                want = ("a Hive UDF class 'com.x.Udf'" if written == "java"
                        else "'package.module:callable'")
                raise self.error(f"LANGUAGE {written.upper()} names {want}, not "
                                 f"'{source}'", token.start_pos, token.value)
        jars = []
        using = self.find(tree, "function_using")
        if using is not None:
            for item in using.children:
                path = item.children[0]
                jars.append(unescape_string(path.value))
                key = "value:jar" + (f".{len(jars) - 1}" if len(jars) > 1 else "")
                self.locations[key] = self.position(path.start_pos)
            if not java:
                raise self.error("USING JAR is for a Hive UDF class ('com.x.Udf'); a Python "
                                 "function names its module", token.start_pos, token.value)
        return CreateFunction, dict(
            name=self.name(self.find(tree, "qualified_name")), source=source,
            returns=self.type_text(returns.children[0]) if returns is not None else None,
            language=language, temporary=self.find(tree, "function_temporary") is not None,
            if_not_exists=self.find(tree, "if_not_exists") is not None, jars=tuple(jars),
            table=tuple(table))

    def _add_jar(self, tree: Tree):
        paths = []
        for item in tree.children:
            if not isinstance(item, Tree):
                continue
            token = item.children[0]
            path = unescape_string(token.value) if token.type == "STRING" else token.value
            key = "value:path" + (f".{len(paths)}" if paths else "")
            self.locations[key] = self.position(token.start_pos)
            paths.append(path)
        return AddJar, dict(paths=tuple(paths))

    def _drop_function(self, tree: Tree):
        return DropFunction, dict(name=self.name(self.find(tree, "qualified_name")),
                                  if_exists=self.find(tree, "if_exists") is not None)

    def _show_functions(self, tree: Tree):
        return ShowFunctions, {}

    def _describe_function(self, tree: Tree):
        return DescribeFunction, dict(name=self.name(self.find(tree, "qualified_name")))
