"""Errors as types (issue 29 item 3): what an error says about itself is given when it is
made, and its class — not its wording — is what handlers and failover match."""

from __future__ import annotations

import ast

import pytest

from streamjob.exceptions import (AccessDeniedError, ChangedLogic, ConnectorError, DataLoss,
                                  InvalidConfiguration, JobError, LocatedError, ParseError,
                                  PermanentFailure, PropertyError, SchemaMismatch, StreamJobError,
                                  ValidationError)

from . import codebase

pytestmark = pytest.mark.unit



def test_key_and_bad_value_are_given_at_construction():
    err = PropertyError("property 'a' must be an integer, got 'x'", key="a", bad_value=True)
    assert (err.key, err.bad_value) == ("a", True)
    plain = ValidationError("no such thing")
    assert (plain.key, plain.bad_value) == (None, False)
    located = ValidationError("bad", 2, 5, "x", key="k")
    assert (located.line, located.column, located.text, located.key) == (2, 5, "x", "k")
    assert SchemaMismatch("t does not fit", columns=["a", "b"]).columns == ("a", "b")


def test_no_error_has_key_bad_value_or_columns_patched_on_after_construction():
    """Outside an ``__init__``, no ``x.key = ``, ``x.bad_value = `` or (on an error)
    ``err.columns = `` assignment in the package: those are constructor keywords."""
    patched = []
    for f in codebase.package_files():
        for node in codebase.nodes(f):
            if not isinstance(node, ast.Assign):
                continue
            targets = [t for tgt in node.targets
                       for t in (tgt.elts if isinstance(tgt, ast.Tuple) else [tgt])]
            for t in targets:
                if (isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                        and t.value.id != "self"
                        and (t.attr in ("key", "bad_value")
                             or (t.attr == "columns" and t.value.id in ("err", "exc", "error")))):
                    patched.append(f"{f.relative_to(codebase.ROOT)}:{node.lineno}")
    assert patched == []


def test_validation_error_is_not_a_parse_error_and_both_are_located():
    assert not issubclass(ValidationError, ParseError)
    assert not issubclass(ParseError, ValidationError)
    for cls in (ParseError, ValidationError, PropertyError, AccessDeniedError, SchemaMismatch):
        assert issubclass(cls, LocatedError)
    err = ValidationError("unknown stream 'x'").locate(3, 7, "a\nb\nselect * from x\n", "f.sql")
    assert str(err) == "f.sql:3:7: unknown stream 'x'"  # the same text as before
    assert err.snippet == "select * from x\n      ^"


@pytest.mark.parametrize("cls,also", [(DataLoss, ConnectorError), (InvalidConfiguration,
                                                                   ConnectorError),
                                      (ChangedLogic, JobError), (SchemaMismatch, ValidationError)])
def test_each_permanent_kind_stays_the_error_it_was_and_leads_with_its_marker(cls, also):
    """Existing handlers still catch them (a DataLoss is a ConnectorError as before), and
    the marker is on the first line, after the position when there is one."""
    assert issubclass(cls, PermanentFailure) and issubclass(cls, also)
    assert issubclass(cls, StreamJobError)
    err = cls("first line\nsecond line")
    assert str(err) == f"{cls.marker} first line\nsecond line"
    assert err.message == "first line\nsecond line"
    err.locate(1, 2)
    assert str(err).splitlines()[0] == f"line 1, column 2: {cls.marker} first line"
