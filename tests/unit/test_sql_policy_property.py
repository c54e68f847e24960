"""Issue 28, point 1, property-based: a job's query built from any sqlglot node type, at
any place (a select item, WHERE, a part of the SELECT or of the table reference), is
either planned with the node in the Spark SQL it emits, or refused with a line and
column. Never another exception (RecursionError, sqlglot's own), never accepted with
the node dropped (on the main of 2026-11-27 TABLESAMPLE, PIVOT and time travel on a
table were planned as a plain ``FROM s``)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from sqlglot import exp, parse_one

from streamjob.exceptions import ValidationError
from streamjob.grammar import parse_script

from .planning import executor, plan

pytestmark = pytest.mark.unit

SETUP = """
CREATE STREAM s (k STRING, v BIGINT) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="127.0.0.1:9");
CREATE TABLE t (k STRING, v BIGINT) STORED AS JSON;
"""
HEAD = 'CREATE STREAMJOB j AS ("'
BASE = "insert into t select k, v from s"


def _subclasses(cls):
    out, todo = set(), [cls]
    while todo:
        c = todo.pop()
        for sub in c.__subclasses__():
            if sub not in out:
                out.add(sub)
                todo.append(sub)
    return out


#: Every concrete sqlglot node type.
NODE_TYPES = sorted((c for c in _subclasses(exp.Expr) if not c.__name__.startswith("_")),
                    key=lambda c: c.__name__)
PLACES = ("item", "where", "select", "table")
_FILL = {
    "this": lambda: exp.column("v"),
    "expression": lambda: exp.Literal.number(1),
    "expressions": lambda: [exp.column("v")],
}


def _node(cls):
    """An instance of ``cls`` with its required parts filled with ``v`` / ``1``."""
    args = {}
    for name, required in cls.arg_types.items():
        if required:
            args[name] = _FILL.get(name, lambda: exp.column("k"))()
    return cls(**args)


@pytest.fixture(scope="module")
def ex(tmp_path_factory):
    yield from executor(tmp_path_factory.mktemp("policy_property"), SETUP)


@settings(max_examples=400, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much])
@given(cls=st.sampled_from(NODE_TYPES), place=st.sampled_from(PLACES), data=st.data())
def test_every_node_type_is_planned_whole_or_refused_with_a_position(ex, cls, place, data):
    try:
        node = _node(cls)
        tree = parse_one(BASE, read="hive")
        select = tree.expression
        if place == "item":
            select.expressions[1].replace(exp.alias_(node, "v"))
        elif place == "where":
            select.set("where", exp.Where(this=node))
        elif place == "select":
            part = data.draw(st.sampled_from(sorted(exp.Select.arg_types)))
            select.set(part, node)
        else:
            part = data.draw(st.sampled_from(sorted(exp.Table.arg_types)))
            select.args["from_"].this.set(part, node)
        text = tree.sql(dialect="hive")
    except Exception:  # noqa: BLE001 - sqlglot cannot build or print it: nothing to test
        assume(False)
    assume('"' not in text and ";" not in text and "\\" not in text)
    try:
        planned = plan(ex, HEAD, text)
    except ValidationError as err:
        if err.line is None:  # a rule about the whole query: CREATE places it at the job
            with pytest.raises(ValidationError) as info:
                ex.execute(parse_script(HEAD + text + '");')[0])
            err = info.value
        assert err.line is not None and err.column is not None, (text, err.message)
        event("refused with a position")
        return
    event("planned")
    # planned: what was written reaches Spark (the node's type, or its text, is there)
    emitted = planned.query.select_sql
    try:
        kinds = {type(n) for n in parse_one(emitted, read="spark").walk()}
    except Exception:  # noqa: BLE001 - e.g. TIMESTAMP(): Spark's analysis refuses it
        kinds = set()
    written = parse_one(text, read="hive")
    placed = [n for n in written.walk() if type(n) is cls]
    assert cls in kinds or not placed or any(
        n.sql(dialect="spark").lower() in emitted.lower() for n in placed), (text, emitted)
