"""The nearest known name (streamjob/nearest.py): one rule for every "did you mean"."""

from pathlib import Path

import pytest

import streamjob
from streamjob.nearest import nearest

pytestmark = pytest.mark.unit


def test_the_nearest_name_is_given_as_it_is_spelt_among_the_known():
    assert nearest("chekpoint.interval", ["Checkpoint.Interval", "flush.mode"]) == "Checkpoint.Interval"
    assert nearest("FORM", ["FROM", "WHERE"]) == "FROM"
    assert nearest("form", ["FROM", "FOR"]) == "FOR"  # difflib: FOR is 0.86, FROM 0.75


def test_no_name_below_the_cutoff_and_always_one_at_zero():
    assert nearest("zzz", ["topic", "format"]) is None
    assert nearest("zzz", ["topic", "format"], cutoff=0.0) in ("topic", "format")
    assert nearest("anything", []) is None


def test_no_other_module_asks_difflib():
    root = Path(streamjob.__file__).parent
    asking = sorted(str(p.relative_to(root)) for p in root.rglob("*.py")
                    if p.name != "nearest.py" and "get_close_matches(" in p.read_text())
    assert asking == []
