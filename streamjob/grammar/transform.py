"""Lark parse tree -> frozen statement dataclasses (:mod:`streamjob.grammar.statements`).

:class:`Builder` walks the tree of one script, statement by statement, and applies the
rules the grammar cannot express: lower-casing of unquoted names, property keys and
types; unescaping of string literals; duplicate columns and clauses; empty delimiters
and queries; the raw tails of ``CREATE STREAM ... AS <query>`` and ``SET k = v``
(including the "missing ';'" check). Each such failure is raised as a
:class:`~streamjob.exceptions.ParseError` pointing at the offending text.
"""

from __future__ import annotations

from lark import Token, Tree

from streamjob.exceptions import ParseError
from streamjob.grammar.lexical import (
    STATEMENT_START_RE,
    Lines,
    ident_value,
    iter_pieces,
    masked,
    trimmed_span,
    unescape_string,
    word_at,
)
from streamjob.grammar.slipstream import SlipstreamForms
from streamjob.grammar.transform_explain import ExplainBuilder
from streamjob.grammar.statements import (
    Column,
    CreateStream,
    CreateTable,
    Describe,
    DescribeStreamJob,
    DropStream,
    DropTable,
    Position,
    QualifiedName,
    ResetProperty,
    RowFormat,
    SetProperty,
    ShowCheckpoints,
    ShowStreamJobs,
    ShowStreams,
    ShowTables,
    Statement,
)

from streamjob.grammar.transform_catalog import CatalogStatementsBuilder
from streamjob.grammar.transform_functions import FunctionsBuilder
from streamjob.grammar.transform_jobs import JobsBuilder
from streamjob.grammar.transform_maintenance import MaintenanceBuilder
from streamjob.grammar.transform_savepoints import SavepointsBuilder
from streamjob.grammar.transform_shadow import ShadowBuilder

__all__ = ["Builder"]


class Builder(CatalogStatementsBuilder, SlipstreamForms, ExplainBuilder, FunctionsBuilder,
              SavepointsBuilder, ShadowBuilder, JobsBuilder,
              MaintenanceBuilder):
    """Turns the lark tree of one script into statement dataclasses (SHOW CREATE,
    databases and topics: :class:`.transform_catalog.CatalogStatementsBuilder`;
    user functions: :class:`.transform_functions.FunctionsBuilder`;
    Slipstream's SerDe and bare-INSERT forms: :class:`.slipstream.SlipstreamForms`;
    EXPLAIN: :class:`.transform_explain.ExplainBuilder`; savepoints:
    :class:`.transform_savepoints.SavepointsBuilder`; shadow runs:
    :class:`.transform_shadow.ShadowBuilder`; the job statements (CREATE, ALTER, START,
    STOP, DROP STREAMJOB): :class:`.transform_jobs.JobsBuilder`; OPTIMIZE and VACUUM:
    :class:`.transform_maintenance.MaintenanceBuilder`)."""

    def __init__(self, text: str, lines: Lines, source: str | None) -> None:
        self.text = text
        self.lines = lines
        self.source = source

    # -- helpers

    def error(self, message: str, offset: int, length_text: str | None = None) -> ParseError:
        line, column = self.lines.position(offset)
        text = length_text if length_text is not None else word_at(self.text, offset)
        return ParseError(message, line, column, text, self.lines.snippet(line, column), self.source)

    def position(self, offset: int) -> Position:
        return Position(*self.lines.position(offset))

    def script(self, tree: Tree) -> list[Statement]:
        """The statements of a script's tree, in order, each with its position and text.

        Raises :class:`ParseError` for what the grammar accepts but the language does not.
        """
        statements = []
        for node in tree.children:
            self.text_end: int | None = None  # set by statements ending in a raw tail
            self.locations: dict[str, Position] = {}
            cls, fields = getattr(self, "_" + node.data)(node)
            meta = node.meta
            end = meta.end_pos if self.text_end is None else self.text_end
            statements.append(
                cls(
                    **fields,
                    position=Position(meta.line, meta.column),
                    text=self.text[meta.start_pos : end].strip(),
                    locations=self.locations,
                )
            )
        return statements

    def name(self, tree: Tree) -> QualifiedName:
        parts = [ident_value(ident.children[0]) for ident in tree.children]
        self.locations.setdefault("name", self.position(tree.children[0].children[0].start_pos))
        if len(parts) == 2:
            return QualifiedName(parts[1], parts[0])
        return QualifiedName(parts[0])

    @staticmethod
    def find(tree: Tree, data: str) -> Tree | None:
        for child in tree.children:
            if isinstance(child, Tree) and child.data == data:
                return child
        return None

    def properties(self, tree: Tree) -> tuple[tuple[str, str], ...]:
        """The ``(key, value)`` pairs of a TBLPROPERTIES / JOBPROPERTIES / WITH
        SERDEPROPERTIES list, keys lower-cased. A key given twice (names are
        case-insensitive) is an error at the second one (issue 28 point 5: the last one
        silently won)."""
        plist = tree.children[0]
        pairs = []
        seen: dict[str, int] = {}
        for prop in plist.children:
            key, value = prop.children
            key_text = unescape_string(key.value) if key.type == "STRING" else key.value
            value_text = unescape_string(value.value) if value.type == "STRING" else value.value
            if key_text.lower() in seen:
                first = self.lines.position(seen[key_text.lower()])
                raise self.error(
                    f"property '{key_text.lower()}' is given twice (first at line {first[0]}, "
                    f"column {first[1]}); give it once", key.start_pos, key.value)
            seen[key_text.lower()] = key.start_pos
            pairs.append((key_text.lower(), value_text))
            self.locations[f"key:{key_text.lower()}"] = self.position(key.start_pos)
            self.locations[f"value:{key_text.lower()}"] = self.position(value.start_pos)
        return tuple(pairs)

    def columns(self, tree: Tree) -> tuple[Column, ...]:
        seen: dict[str, Token] = {}
        columns = []
        for column in tree.children:
            ident_tok = column.children[0].children[0]
            name = ident_value(ident_tok)
            if name.lower() in seen:
                raise self.error(f"column '{name}' is declared twice", ident_tok.start_pos)
            seen[name.lower()] = ident_tok
            self.locations[f"column:{name.lower()}"] = self.position(ident_tok.start_pos)
            columns.append(Column(name, self.type_text(column.children[1])))
        return tuple(columns)

    def partitions(self, tree: Tree, columns: tuple[Column, ...]
                   ) -> tuple[tuple[Column, ...], tuple[str, ...]]:
        """The columns PARTITIONED BY adds and the partition column names.

        ``name TYPE`` declares a new column (Hive), appended after ``columns``; a bare
        ``name`` refers to a column of the list (Spark). Each partition column must be
        exactly one column, listed once, and one column at least must be left that is
        not a partition column (Spark and Hive keep no file without data columns)."""
        self.locations["partitioned_by"] = self.position(tree.meta.start_pos)
        declared = {c.name.lower() for c in columns}
        added: list[Column] = []
        names: list[str] = []
        for entry in tree.children:
            ident_tok = entry.children[0].children[0]
            name = ident_value(ident_tok)
            key = name.lower()
            if key in {n.lower() for n in names}:
                raise self.error(f"partition column '{name}' is listed twice in PARTITIONED BY",
                                 ident_tok.start_pos)
            typed = len(entry.children) > 1
            if typed and key in declared:
                raise self.error(
                    f"column '{name}' is declared in the column list and again in PARTITIONED BY; "
                    f"write PARTITIONED BY ({name}) without a type to partition by it",
                    ident_tok.start_pos)
            if not typed and key not in declared:
                raise self.error(
                    f"partition column '{name}' is not a column of the table; declare it with "
                    f"a type, as in PARTITIONED BY ({name} STRING), or add it to the column list",
                    ident_tok.start_pos)
            self.locations[f"partition:{key}"] = self.position(ident_tok.start_pos)
            if typed:
                self.locations[f"column:{key}"] = self.position(ident_tok.start_pos)
                added.append(Column(name, self.type_text(entry.children[1])))
            names.append(name)
        if len(names) == len(columns) + len(added):
            raise self.error("every column is a partition column; a partitioned table needs "
                             "at least one column that is not", tree.meta.start_pos)
        return tuple(added), tuple(names)

    def type_text(self, tree: Tree) -> str:
        out = [tree.children[0].value.lower()]
        for part in tree.children[1:]:
            if part.data == "type_params":
                out.append("(" + ",".join(tok.value.lstrip("0") or "0" for tok in part.children) + ")")
            else:
                args = []
                for arg in part.children:
                    if arg.data == "struct_field":
                        ident_tok = arg.children[0].children[0]
                        field_name = ident_value(ident_tok)
                        if ident_tok.type == "QUOTED_IDENT":
                            field_name = "`" + field_name.replace("`", "``") + "`"
                        args.append(f"{field_name}:{self.type_text(arg.children[1])}")
                    else:
                        args.append(self.type_text(arg))
                out.append("<" + ",".join(args) + ">")
        return "".join(out)

    def row_format(self, tree: Tree) -> RowFormat:
        values = {}
        for clause in tree.children:
            token = clause.children[0]
            value = unescape_string(token.value)
            if value == "":
                raise self.error("a delimiter cannot be empty", token.start_pos)
            values[clause.data] = value
        return RowFormat(values.get("fields_terminated"), values.get("lines_terminated"))

    def clauses(self, tree: Tree, allowed: dict[str, str]) -> dict[str, Tree]:
        found: dict[str, Tree] = {}
        seen: dict[str, Tree] = {}  # by clause name: ROW FORMAT DELIMITED and SERDE are one
        for child in tree.children:
            if isinstance(child, Tree) and child.data in allowed:
                if allowed[child.data] in seen:
                    raise self.error(f"duplicate {allowed[child.data]} clause", child.meta.start_pos)
                seen[allowed[child.data]] = found[child.data] = child
        return found

    # -- statements (each returns a dict of fields plus the class)

    _TABLE_CLAUSES = {
        "partitioned_by": "PARTITIONED BY",
        "row_format": "ROW FORMAT",
        "row_format_serde": "ROW FORMAT",
        "stored_as": "STORED AS",
        "stored_by": "STORED AS",
        "location": "LOCATION",
        "tblproperties": "TBLPROPERTIES",
        "object_comment": "COMMENT",
    }

    def _create_stream(self, tree: Tree):
        found = self.clauses(tree, self._TABLE_CLAUSES)
        if "stored_as" in found:
            self.locations["stored_as"] = self.position(found["stored_as"].meta.start_pos)
        if "location" in found:
            self.locations["location"] = self.position(found["location"].children[0].start_pos)
        return CreateStream, dict(
            name=self.name(self.find(tree, "qualified_name")),
            columns=self.columns(self.find(tree, "column_list")),
            if_not_exists=self.find(tree, "if_not_exists") is not None,
            row_format=self.any_row_format(found),
            stored_as=ident_value(found["stored_as"].children[0].children[0]).lower()
            if "stored_as" in found else None,
            location=unescape_string(found["location"].children[0].value)
            if "location" in found else None,
            properties=self.properties(found["tblproperties"]) if "tblproperties" in found else (),
        )

    def _create_table(self, tree: Tree):
        found = self.clauses(tree, self._TABLE_CLAUSES)
        name = self.name(self.find(tree, "qualified_name"))
        columns = self.columns(self.find(tree, "column_list"))
        partitioned_by: tuple[str, ...] = ()
        if "partitioned_by" in found:
            added, partitioned_by = self.partitions(found["partitioned_by"], columns)
            columns += added
        stored_by = None
        if "stored_by" in found:
            token = found["stored_by"].children[0]
            self.locations["stored_as"] = self.position(found["stored_by"].meta.start_pos)
            stored_by = unescape_string(token.value).strip()
        elif "stored_as" in found:
            self.locations["stored_as"] = self.position(found["stored_as"].meta.start_pos)
        if "location" in found:  # the path's string, where a refused LOCATION is reported
            self.locations["location"] = self.position(found["location"].children[0].start_pos)
        return CreateTable, dict(
            name=name,
            columns=columns,
            partitioned_by=partitioned_by,
            if_not_exists=self.find(tree, "if_not_exists") is not None,
            row_format=self.any_row_format(found),
            stored_by=stored_by,
            stored_as=ident_value(found["stored_as"].children[0].children[0]).lower()
            if "stored_as" in found
            else None,
            location=unescape_string(found["location"].children[0].value) if "location" in found else None,
            properties=self.properties(found["tblproperties"]) if "tblproperties" in found else (),
        )

    def _create_stream_as(self, tree: Tree):
        token = tree.children[-1]
        start, end = self.raw_tail(token)
        start, end = self.strip_parens(start, end)
        return CreateStream, dict(
            name=self.name(self.find(tree, "qualified_name")),
            if_not_exists=self.find(tree, "if_not_exists") is not None,
            as_select=self.text[start:end],
            as_select_position=self.position(start),
        )

    def _show_streamjobs(self, tree: Tree):
        return ShowStreamJobs, {}

    def _describe_streamjob(self, tree: Tree):
        return DescribeStreamJob, dict(name=self.name(self.find(tree, "qualified_name")))

    def _show_checkpoints(self, tree: Tree):
        return ShowCheckpoints, dict(name=self.name(self.find(tree, "qualified_name")))

    def _show_streams(self, tree: Tree):
        return ShowStreams, {}

    def _show_tables(self, tree: Tree):
        return ShowTables, {}

    def _describe(self, tree: Tree):
        kind = None
        if self.find(tree, "kind_stream") is not None:
            kind = "stream"
        elif self.find(tree, "kind_table") is not None:
            kind = "table"
        return Describe, dict(name=self.name(self.find(tree, "qualified_name")), kind=kind)

    def _drop_stream(self, tree: Tree):
        return DropStream, dict(
            name=self.name(self.find(tree, "qualified_name")),
            if_exists=self.find(tree, "if_exists") is not None,
        )

    def _drop_table(self, tree: Tree):
        return DropTable, dict(
            name=self.name(self.find(tree, "qualified_name")),
            if_exists=self.find(tree, "if_exists") is not None,
        )

    def _set_property(self, tree: Tree):
        tokens = [c for c in tree.children if isinstance(c, Token)]
        key = next((t for t in tokens if t.type == "KEY"), None)
        if key is None:
            return SetProperty, {}
        self.locations[f"key:{key.value.lower()}"] = self.position(key.start_pos)
        value_token = next((t for t in tokens if t.type == "SET_VALUE"), None)
        value = ""
        if value_token is not None:
            start, end = self.raw_tail(value_token)
            self.locations[f"value:{key.value.lower()}"] = self.position(start)
            raw = self.text[start:end]
            pieces = [(k, s, e) for k, s, e in iter_pieces(raw) if k != "comment"]
            value = "".join(raw[s:e] for _, s, e in pieces).strip()
            meaningful = [(k, s, e) for k, s, e in pieces if k != "ws"]
            if len(meaningful) == 1 and meaningful[0][0] == "str":
                value = unescape_string(raw[meaningful[0][1] : meaningful[0][2]])
        return SetProperty, dict(key=key.value.lower(), value=value)

    def _reset_property(self, tree: Tree):
        key = next((c for c in tree.children if isinstance(c, Token) and c.type == "KEY"), None)
        if key is not None:
            self.locations[f"key:{key.value.lower()}"] = self.position(key.start_pos)
        return ResetProperty, dict(key=key.value.lower() if key is not None else None)

    # -- raw tails

    def raw_tail(self, token: Token) -> tuple[int, int]:
        """Offsets of a raw tail token without leading/trailing blanks and trailing
        comments; raises "missing ';'" if a statement keyword starts one of its lines."""
        raw = token.value
        match = STATEMENT_START_RE.search(masked(raw))
        if match is not None:
            offset = token.start_pos + match.start(1)
            word = word_at(self.text, offset)
            raise self.error(
                f"missing ';' between statements: '{word}' on line "
                f"{self.lines.position(offset)[0]} starts a new statement",
                offset,
                word,
            )
        first, last = trimmed_span(raw) or (0, 0)
        self.text_end = token.start_pos + last
        return token.start_pos + first, token.start_pos + last

    def strip_parens(self, start: int, end: int) -> tuple[int, int]:
        """Remove one pair of parentheses enclosing the whole query, if there is one."""
        raw = self.text[start:end]
        if not raw.startswith("("):
            return start, end
        depth = 0
        for kind, s, e in iter_pieces(raw):
            if kind != "other":
                continue
            for i, ch in enumerate(raw[s:e], s):
                if ch == "(":
                    depth += 1
                elif ch == ")":
                    depth -= 1
                    if depth == 0:
                        if i != len(raw) - 1:
                            return start, end  # (a) UNION (b): not one enclosing pair
                        span = trimmed_span(raw[1:i])
                        if span is None:
                            raise self.error("the query after AS is empty", start, "(")
                        return start + 1 + span[0], start + 1 + span[1]
        raise self.error("missing ')' to close the query after AS", start, "(")
