"""``streamjob check --compat FILE``: what streamjob does with each clause and property
of an old Slipstream script (issue 18).

Every statement of the script (split at ``;`` outside strings and comments, as the
shell does) is parsed on its own, so one statement streamjob refuses does not hide the
others. Each statement, clause and property gets one :class:`Item` with a verdict:

* ``runs`` — streamjob does what Slipstream did;
* ``mapped`` — done through its Spark meaning (the detail says which: e.g.
  ``mapred.reduce.tasks`` -> ``spark.sql.shuffle.partitions``);
* ``ignored`` — accepted, no effect here, with the reason (the notice ``submit`` shows);
* ``refused`` — an error in ``submit``: the detail is the error and the rewrite.

Property verdicts come from the property registry (:mod:`streamjob.properties`); nothing
is executed and no catalog, broker or ZooKeeper is touched (``streamjob check FILE`` is
the full dry run).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..exceptions import StreamJobError
from ..grammar import statements as st

#: Slipstream job properties that the planner reads (they have no single target
#: property): name -> what they become.
PLANNER_MAPPED = {
    "morphling.maxlag.on.disorder":
        "the watermark delay of the job's event-time streams (-1 = 0)",
    "morphling.hdfs.flush.interval.ms":
        "the trigger interval of a job writing a file table (no effect on other sinks)",
}

#: First words of Slipstream statements streamjob has no form for -> the rewrite.
REWRITES = (
    ("create application", "streamjob has no applications: drop the statement (a job's "
                           "database qualifies its name)"),
    ("use application", "streamjob has no applications: drop the statement"),
)

#: The detail of Slipstream's and Hive's jar functions (docs/functions.md "Hive UDF jars").
ADD_JAR = ("the jar must lie in a jar directory of the admin (streamjob.security.functions.jars, "
           "default functions/ of the home); a path elsewhere is refused")
HIVE_FUNCTION = ("a Hive UDF class, run by Spark's Hive support; its class is looked up in "
                 "the USING JAR jars, else in the jars ADD JAR added")


@dataclass(frozen=True)
class Item:
    """One line of the report: ``line`` (1-based) in the script, ``clause`` (a
    statement's head, ``ROW FORMAT DELIMITED``, ``"key"="value"``), ``verdict``
    (runs | mapped | ignored | refused), ``detail`` (what, why, or the rewrite) and
    ``depth`` (0 a statement, 1 a clause or property of it)."""

    line: int
    clause: str
    verdict: str
    detail: str = ""
    depth: int = 0

    def render(self, source: str) -> str:
        """``source:line: <indent>clause: verdict[: detail]``."""
        tail = f": {self.detail}" if self.detail else ""
        return f"{source}:{self.line}: {'  ' * self.depth}{self.clause}: {self.verdict}{tail}"


def compat_report(text: str, source: str | None = None) -> list[Item]:
    """The :class:`Item` list of script ``text`` (variables already substituted)."""
    from ..grammar import parse_statement
    from .splitter import split_input

    split = split_input(text)
    pieces = [(p.text, p.offset) for p in split.pieces if p.kind == "sql"]
    if split.rest.strip():
        pieces.append((split.rest, split.rest_offset))
    items: list[Item] = []
    for piece, offset in pieces:
        line = text.count("\n", 0, offset) + 1
        try:
            stmt = parse_statement(piece, source)
        except StreamJobError as exc:
            items.append(_refused_statement(piece, line, exc))
            continue
        items += _statement_items(stmt, line + stmt.position.line - 1)  # after comments
    return items


def _head(text: str, words: int = 3) -> str:
    """The statement's first words, outside comments (as its clause name)."""
    from .splitter import tokenize

    out = [t.text for t in tokenize(text) if t.significant][:words]
    return " ".join(out).upper() if out else text.strip()[:40]


def _title(stmt: st.Statement) -> str:
    """``CREATE STREAM clicks``: the statement's keywords before its name, and the name."""
    from .splitter import tokenize

    name = getattr(stmt, "name", None)
    database = getattr(stmt, "database", None)
    if not isinstance(name, st.QualifiedName) and isinstance(database, str):
        name = st.QualifiedName(database)  # CREATE/USE/DROP DATABASE db
    if not isinstance(name, st.QualifiedName):
        return _head(stmt.text)
    stop = {name.name.lower(), (name.database or name.name).lower(), "if"}
    words = []
    for tok in tokenize(stmt.text):
        if not tok.significant:
            continue
        if tok.text.strip("`").lower() in stop or len(words) == 3:
            break
        words.append(tok.text.upper())
    return f"{' '.join(words)} {name}"


def _refused_statement(piece: str, line: int, exc: StreamJobError) -> Item:
    from .splitter import tokenize

    words = " ".join(t.text.lower() for t in tokenize(piece) if t.significant)
    rewrite = next((r for w, r in REWRITES if words.startswith(w)), None)
    detail = exc.message.splitlines()[0] + (f"; rewrite: {rewrite}" if rewrite else "")
    where = line + (exc.line - 1 if exc.line else 0)
    return Item(where, _head(piece), "refused", detail)


def _statement_items(stmt: st.Statement, line: int) -> list[Item]:
    def at(key: str) -> int:
        pos = stmt.locations.get(key)
        return line + pos.line - stmt.position.line if pos else line

    head = Item(line, _title(stmt), "runs")
    if isinstance(stmt, st.SetProperty) and stmt.key:
        verdict, detail = job_property_verdict(stmt.key, stmt.value or "")
        return [Item(line, f"SET {stmt.key}={stmt.value}", verdict, detail)]
    if isinstance(stmt, st.InsertInto):  # older Slipstream's bare INSERT (issue 18)
        head = Item(line, f"INSERT INTO {stmt.target}", "runs",
                    "an implicit job, insert_<8 hex> from the statement's text, created and "
                    "started (as older Slipstream does)")
    if isinstance(stmt, st.AddJar):
        head = Item(line, _head(stmt.text, 2), "runs", ADD_JAR)
    if isinstance(stmt, st.CreateFunction) and stmt.language == "java":
        head = Item(line, head.clause, "runs", HIVE_FUNCTION)
    items = [head]
    if isinstance(stmt, (st.CreateStreamJob, st.InsertInto, st.ReplaceStreamJobQuery)):
        items += _pattern_items(stmt.query, line)
    if isinstance(stmt, (st.CreateStream, st.CreateTable)):
        if stmt.row_format is not None:
            items.append(_row_format_item(stmt, line))
        if isinstance(stmt, st.CreateTable):
            items += _storage_items(stmt, line)
        pairs = st.props(stmt.properties)
        scope = _scope(stmt, pairs)
        for key, value in stmt.properties:
            verdict, detail = connector_verdict(scope, key, pairs)
            items.append(Item(at(f"key:{key}"), f'"{key}"="{value}"', verdict, detail, 1))
    if isinstance(stmt, (st.CreateStreamJob, st.InsertInto, st.ReplaceStreamJobQuery)):
        start = getattr(stmt, "query_position", None)
        items += query_clause_items(stmt.query, line + (start.line - stmt.position.line
                                                        if start else 0))
    elif isinstance(stmt, st.CreateStream) and stmt.as_select:
        start = stmt.as_select_position
        items += query_clause_items(stmt.as_select, line + (start.line - stmt.position.line
                                                            if start else 0), derived=True)
    if isinstance(stmt, (st.CreateStreamJob, st.AlterStreamJob, st.ReplaceStreamJobQuery)):
        for key, value in stmt.properties:
            verdict, detail = job_property_verdict(key, value)
            items.append(Item(at(f"key:{key}"), f"{key}={value}", verdict, detail, 1))
    if any(i.verdict == "refused" for i in items[1:]):  # the statement cannot run as is
        items[0] = Item(line, head.clause, "refused", "a clause of it is refused (below)")
    return items


def _pattern_items(query: str, line: int) -> list[Item]:
    """The CEP clause of a job's query (``PATTERN (...) WITHIN (...)``), if it has one:
    it runs (:mod:`streamjob.cep`); a malformed one is refused with the reader's error."""
    from ..planner.pattern import extract_pattern
    from ..planner.text import QueryText

    if "pattern" not in query.lower():
        return []
    try:
        _, clause = extract_pattern(QueryText(query, None), query)
    except StreamJobError as exc:
        return [Item(line, "PATTERN (...)", "refused", exc.message.splitlines()[0], 1)]
    if clause is None:
        return []
    ops = " ".join(v.link.upper() for v in clause.variables[1:])
    return [Item(line, f"PATTERN ({ops}) {clause.within_text}", "runs",
                 "CEP, matched per key in Spark's stateful processing (applyInPandasWithState, "
                 "state in the job's checkpoint), with Flink CEP's rules where Slipstream's docs "
                 "are silent (docs/streamsql.md, CEP)", 1)]


def query_clause_items(query: str, line: int, derived: bool = False) -> list[Item]:
    """The window clauses of a job's query (STREAMWINDOW, both SESSIONWINDOW forms), one
    item each, at their line (``line`` is where the query starts). Clauses are found by their tokens; the full check is
    ``streamjob check``."""
    from ..planner.sessions import is_predicate_form
    from ..planner.text import tokenize

    from sqlglot.tokens import TokenType

    tokens = tokenize(query) or []
    items = []
    for i, tok in enumerate(tokens):
        word = tok.text.upper()
        if tok.token_type != TokenType.VAR or word not in ("STREAMWINDOW", "SESSIONWINDOW"):
            continue
        at = line + query.count("\n", 0, tok.start)
        if word == "STREAMWINDOW":
            items.append(Item(at, "STREAMWINDOW", "mapped", "Spark's window(<event time or "
                              "processing time>, length[, slide]) in the GROUP BY", 1))
        elif derived:
            items.append(Item(at, "SESSIONWINDOW", "refused", "a derived stream cannot use "
                              "SESSIONWINDOW; group by sessions in the streamjob that reads it",
                              1))
        elif is_predicate_form(tokens, i):
            items.append(Item(at, "SESSIONWINDOW(INIT[...] END[...] KEYEDBY(...))", "runs",
                              "predicate sessions per KEYEDBY key, Spark's applyInPandasWithState "
                              "with state in the checkpoint; one row per session, appended when "
                              "it closes (rules: docs/streamsql.md)", 1))
        else:
            items.append(Item(at, "SESSIONWINDOW ... (GAP ...)", "mapped",
                              "Spark's session_window(<time>, gap) in the GROUP BY", 1))
    return items


def _row_format_item(stmt, line: int) -> Item:
    """The ROW FORMAT clause's line: what :func:`streamjob.connectors.hive_forms.
    row_format_record` (the rule CREATE applies) makes of it, or why it refuses it."""
    from ..connectors import hive_forms

    rf = stmt.row_format
    clause = f"ROW FORMAT SERDE '{rf.serde}'" if rf.serde else "ROW FORMAT DELIMITED"
    try:
        record = hive_forms.row_format_record(rf.fields_terminated_by, rf.lines_terminated_by,
                                              rf.serde, dict(rf.serde_properties))
    except StreamJobError as exc:
        return Item(line, clause, "refused", exc.message.splitlines()[0], 1)
    if record["format"] == "json":
        return Item(line, clause, "mapped", "format json", 1)
    sep = hive_forms.delimiter_of(record) or pairs_delimiter(stmt)
    return Item(line, clause, "mapped" if rf.serde else "runs",
                f"format delimited, fields split at {sep!r}", 1)


def _storage_items(stmt: st.CreateTable, line: int) -> list[Item]:
    """STORED AS / STORED BY / LOCATION of a CREATE TABLE: HBase-backed storage is refused
    with its replacement (:func:`streamjob.connectors.hive_forms.check_storage`)."""
    from ..connectors import hive_forms

    stored_by = getattr(stmt, "stored_by", None)
    try:
        hive_forms.check_storage(stmt.name.name, stmt.stored_as, stored_by)
        refused = None
    except StreamJobError as exc:
        refused = exc.message.splitlines()[0]
    items = []
    if stored_by:
        items.append(Item(line, f"STORED BY '{stored_by}'", "refused", refused or "", 1))
    elif stmt.stored_as:
        items.append(Item(line, f"STORED AS {stmt.stored_as.upper()}",
                          "refused" if refused else "runs", refused or "", 1))
    if stmt.location:
        items.append(Item(line, f"LOCATION {stmt.location}", "runs", "", 1))
    return items


def pairs_delimiter(stmt) -> str:
    """The ``"delimiter"`` TBLPROPERTY of ``stmt``, else ``,``."""
    return st.props(stmt.properties).get("delimiter", ",")


def _scope(stmt, pairs: dict[str, str]) -> str | None:
    """The connector scope of a CREATE STREAM/TABLE (``kafka stream`` ...), None for a
    derived stream or an unknown source/connector (the rule of
    :func:`streamjob.connectors.spec.stream_scope` / :func:`~streamjob.connectors.spec.table_scope`)."""
    from ..connectors import spec as cspec

    if isinstance(stmt, st.CreateStream):
        if stmt.as_select is not None:
            return None
        return cspec.stream_scope(pairs)
    return cspec.table_scope(pairs, stmt.stored_as)


def connector_verdict(scope: str | None, key: str, pairs: dict[str, str]) -> tuple[str, str]:
    """``(verdict, detail)`` of TBLPROPERTIES ``key`` of a ``scope`` stream or table."""
    from ..properties import CONNECTOR, Registry

    if scope is None:
        return ("refused", "unknown source or connector") if key in ("source", "connector") \
            else ("runs", "")
    known = Registry([p for p in CONNECTOR if scope in p.scopes])
    if known.get(key) is None:
        other = CONNECTOR.get(key)
        hint = (f"; it belongs to a {' or '.join(other.scopes)}" if other is not None
                else known.suggest(key))
        return "refused", f"unknown property of a {scope}{hint}"
    if key == "kafka.zookeeper":
        if pairs.get("kafka.broker.list"):
            return "ignored", "\"kafka.broker.list\" is given; Kafka clients need only brokers"
        return "mapped", "the brokers Kafka registers in this ZooKeeper (/brokers/ids)"
    return "runs", ""


def job_property_verdict(key: str, value: str) -> tuple[str, str]:
    """``(verdict, detail)`` of job property (JOBPROPERTIES, SET) ``key`` = ``value``."""
    from ..exceptions import PropertyError
    from ..properties import JOB

    prop = JOB.get(key)
    if prop is None:
        if JOB.passthrough(key):
            return "runs", "a Spark SQL setting of the job's session"
        try:
            JOB.lookup(key)
        except PropertyError as exc:
            return "refused", exc.message
    try:
        parsed = prop.parse(value)
    except PropertyError as exc:
        return "refused", exc.message
    if prop.ignored:
        return "ignored", prop.ignored
    if prop.maps_to:
        if parsed == -1:
            return "ignored", f"-1 keeps the engine's {prop.maps_to}"
        return "mapped", f"{prop.maps_to}={parsed} (unless {prop.maps_to} is given)"
    if prop.name in PLANNER_MAPPED:
        return "mapped", PLANNER_MAPPED[prop.name]
    return "runs", ""


def summary(items: list[Item]) -> str:
    """``N statements: a runs, b mapped, c ignored, d refused``."""
    counts = {v: sum(1 for i in items if i.verdict == v) for v in ("runs", "mapped", "ignored", "refused")}
    statements = sum(1 for i in items if i.depth == 0)
    return (f"{statements} statement{'s' if statements != 1 else ''}: "
            + ", ".join(f"{n} {v}" for v, n in counts.items()))
