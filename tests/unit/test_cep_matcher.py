"""The CEP matcher's rules (streamjob/cep/nfa.py's docstring, docs/streamsql.md's CEP
section), event by event, in pure Python: contiguity (FOLLOWEDBY relaxed, NEXT strict),
NOTNEXT/NOTFOLLOWEDBY, TIMES(n) and non-greedy ONEORMORE, overlapping matches (Flink's
no-skip), WITHIN from first to last event, and SQL's three-valued conditions."""

from __future__ import annotations

import pytest

from streamjob.cep.nfa import Matcher, Pattern, Stage, evaluate

pytestmark = pytest.mark.unit


def kind(var: str, k: str) -> tuple:
    return ("eq", ("col", var, "k"), ("lit", k))


def run(stages, events, within=1000):
    """Names of the events of every match, per variable, for ``events`` (``"a1"`` is an
    event of kind ``a``), one per millisecond."""
    m = Matcher(Pattern(tuple(stages), within))
    out = []
    for t, name in enumerate(events):
        for match in m.feed(t, {"k": name[0], "n": name}):
            out.append(" ".join("+".join(r["n"] for r in rows) for rows in match))
    return out


A, B = Stage("a", kind("a", "a")), Stage("b", kind("b", "b"), "followedby")


def test_followedby_takes_the_first_matching_event_and_ignores_others():
    assert run([A, B], ["a1", "c1", "b1", "b2"]) == ["a1 b1"]


def test_next_needs_the_very_next_event():
    nxt = Stage("b", kind("b", "b"), "next")
    assert run([A, nxt], ["a1", "c1", "b1"]) == []
    assert run([A, nxt], ["a1", "b1"]) == ["a1 b1"]


def test_every_start_event_starts_a_match_no_skip():
    assert run([A, B], ["a1", "a2", "b1"]) == ["a1 b1", "a2 b1"]


def test_times_takes_exactly_n_with_relaxed_contiguity_between():
    b2 = Stage("b", kind("b", "b"), "followedby", 2, 2)
    assert run([A, b2], ["a1", "b1", "c1", "b2", "b3"]) == ["a1 b1+b2"]


def test_oneormore_is_non_greedy():
    aplus = Stage("a", kind("a", "a"), "start", 1, None)
    assert sorted(run([aplus, B], ["a1", "a2", "b1"])) == ["a1 b1", "a1+a2 b1", "a2 b1"]


def test_a_pattern_ending_in_oneormore_emits_at_each_repetition():
    bplus = Stage("b", kind("b", "b"), "followedby", 1, None)
    assert run([A, bplus], ["a1", "b1", "c1", "b2"]) == ["a1 b1", "a1 b1+b2"]


def test_notnext_checks_only_the_next_event():
    x = Stage("x", kind("x", "x"), "notnext")
    assert run([A, x, B], ["a1", "x1", "b1"]) == []
    assert run([A, x, B], ["a1", "c1", "x1", "b1"]) == ["a1 b1"]


def test_notnext_then_next_reads_the_same_event():
    x = Stage("x", kind("x", "x"), "notnext")
    nxt = Stage("b", kind("b", "b"), "next")
    assert run([A, x, nxt], ["a1", "b1"]) == ["a1 b1"]
    assert run([A, x, nxt], ["a1", "c1", "b1"]) == []


def test_notfollowedby_forbids_any_event_in_between():
    x = Stage("x", kind("x", "x"), "notfollowedby")
    assert run([A, x, B], ["a1", "c1", "x1", "b1"]) == []
    assert run([A, x, B], ["a1", "c1", "b1", "x1"]) == ["a1 b1"]


def test_within_bounds_first_to_last_event_strictly():
    m = Matcher(Pattern((A, B), 10))
    m.feed(0, {"k": "a", "n": "a1"})
    assert m.feed(10, {"k": "b", "n": "b1"}) == []  # 10 - 0 >= WITHIN
    m.feed(20, {"k": "a", "n": "a2"})
    assert len(m.feed(29, {"k": "b", "n": "b2"})) == 1
    m.feed(30, {"k": "a", "n": "a3"})
    m.expire(39)
    assert len(m.partials) == 1
    m.expire(40)
    assert m.partials == []


def test_conditions_read_earlier_variables_and_their_last_event():
    e1 = Stage("e1", ("gt", ("col", "e1", "cnt"), ("lit", 0)))
    e2 = Stage("e2", ("and", ("eq", ("col", "e2", "id"), ("col", "e1", "id")),
                      ("gt", ("sub", ("col", "e2", "cnt"), ("col", "e1", "cnt")), ("lit", 2))),
               "followedby", 2, 2)
    e3 = Stage("e3", ("gt", ("col", "e3", "cnt"), ("col", "e2", "cnt")), "followedby")
    m = Matcher(Pattern((e1, e2, e3), 1000))
    rows = [{"id": 1, "cnt": 1}, {"id": 2, "cnt": 9}, {"id": 1, "cnt": 4},
            {"id": 1, "cnt": 2}, {"id": 1, "cnt": 7}, {"id": 1, "cnt": 5}, {"id": 1, "cnt": 8}]
    out = [mt for t, r in enumerate(rows) for mt in m.feed(t, r)]
    # e1 = cnt 1; e2 = cnt 4 and 7 (cnt 2 fails e2.cnt - e1.cnt > 2); e3 > last e2 (7): 8
    assert [[r["cnt"] for r in rows] for rows in out[0]] == [[1], [4, 7], [8]]


def test_null_never_matches_three_valued_logic():
    env = {"e": {"x": None, "y": 1}}
    assert evaluate(("gt", ("col", "e", "x"), ("lit", 0)), env) is None
    assert evaluate(("or", ("gt", ("col", "e", "x"), ("lit", 0)), ("lit", True)), env) is True
    assert evaluate(("and", ("isnull", ("col", "e", "x")), ("in", ("col", "e", "y"),
                                                            (("lit", 1), ("lit", 2)))), env)
    assert evaluate(("like", ("lit", "login/x"), ("lit", "login%")), env) is True
    assert evaluate(("div", ("lit", 1), ("lit", 0)), env) is None
    m = Matcher(Pattern((Stage("e", ("gt", ("col", "e", "x"), ("lit", 0))),), 10))
    assert m.feed(0, {"x": None}) == [] and m.feed(1, {"x": 1}) == [[[{"x": 1}]]]
