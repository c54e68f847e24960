"""Delta tables on object stores (issue 32): a LOCATION on s3://, gs:// or abfs[s]://
passes delta-rs' storage options from ``"delta.storage.*"`` TBLPROPERTIES; secrets are
given by reference (``${env:}``, ``${file:}``) or sealed in the catalog, resolved only
when delta-rs is called; an operator's LOCATION must lie under an object-store prefix
the admin's file roots name. Local only, as the issue says: nothing here reaches a
store (delta-rs' own object stores are its business)."""

from __future__ import annotations

import pytest

from streamjob.catalog import Catalog
from streamjob.catalog.records import Role
from streamjob.connectors import spec as cspec
from streamjob.connectors.delta.spec import storage_key
from streamjob.exceptions import PropertyError, StreamJobError, ValidationError
from streamjob.executor import Executor
from streamjob.grammar import parse_script
from streamjob.home import Home
from streamjob.security import PolicyError

pytestmark = pytest.mark.unit

ROOTS = "streamjob.security.file.roots"


@pytest.fixture
def home(tmp_path):
    """A home: opening it activates its admin's rules, under which references resolve."""
    return Home.open(tmp_path / "home", {})


def _run(ex: Executor, text: str):
    out = None
    for stmt in parse_script(text):
        out = ex.execute(stmt)
    return out


def test_storage_properties_map_to_delta_rs_storage_options(home, monkeypatch):
    sp = cspec.table_spec("t", {"Delta.Storage.AWS.Region": "eu-west-1",
                                "delta.storage.aws.endpoint.url": "http://127.0.0.1:9000",
                                "delta.storage.aws.access.key.id": "AKIA1",
                                "delta.storage.aws.secret.access.key":
                                    "${env:STREAMJOB_SECRET_S3}"},
                          "delta", "s3://bucket/lake/t/", "/w")
    assert sp.remote and sp.path == "s3://bucket/lake/t" and not sp.static_readable
    assert sp.reach().paths == (("s3://bucket/lake/t/", "LOCATION", "location"),)
    # the spec keeps the reference; only storage_options() resolves it
    assert dict(sp.storage)["AWS_SECRET_ACCESS_KEY"] == "${env:STREAMJOB_SECRET_S3}"
    monkeypatch.setenv("STREAMJOB_SECRET_S3", "s3cr3t")
    assert sp.storage_options() == {"AWS_REGION": "eu-west-1",
                                    "AWS_ENDPOINT_URL": "http://127.0.0.1:9000",
                                    "AWS_ACCESS_KEY_ID": "AKIA1",
                                    "AWS_SECRET_ACCESS_KEY": "s3cr3t"}
    assert storage_key("delta.storage.azure.storage.account.key") == "AZURE_STORAGE_ACCOUNT_KEY"
    for loc in ("gs://b/t", "abfss://c@acct.dfs.core.windows.net/t", "abfs://c@a/t"):
        assert cspec.table_spec("t", {}, "delta", loc, "/w").remote
    local = cspec.table_spec("t", {}, "delta", "/data/t", "/w")
    assert local.storage_options() is None and local.static_readable


@pytest.mark.parametrize("props, location, words", [
    ({"delta.storage.aws.region": "x"}, "/data/t", "for a LOCATION on an object store"),
    ({"delta.storage.aws.bucket": "x"}, "s3://b/t", "unknown property"),
    ({}, "s3:///t", "names no bucket"),
])
def test_storage_options_are_refused_where_they_cannot_apply(props, location, words):
    with pytest.raises((ValidationError, PropertyError)) as err:
        cspec.table_spec("t", props, "delta", location, "/w")
    assert words in err.value.message


def test_a_reference_outside_the_admins_rules_or_unset_is_refused(home, monkeypatch):
    sp = cspec.table_spec("t", {"delta.storage.aws.secret.access.key": "${env:HOME}"},
                          "delta", "s3://b/t", "/w")
    with pytest.raises(PolicyError) as err:  # not a STREAMJOB_SECRET_* variable
        sp.storage_options()
    assert "HOME" in err.value.message
    sp = cspec.table_spec("t", {"delta.storage.aws.secret.access.key":
                                "${env:STREAMJOB_SECRET_UNSET_X}"}, "delta", "s3://b/t", "/w")
    monkeypatch.delenv("STREAMJOB_SECRET_UNSET_X", raising=False)
    with pytest.raises(StreamJobError) as err:
        sp.storage_options()
    assert "STREAMJOB_SECRET_UNSET_X" in err.value.message


def test_a_literal_secret_is_sealed_in_the_catalog_and_never_shown(home):
    ex = Executor(Catalog(home.catalog_url), home)
    _run(ex, "CREATE TABLE t (id BIGINT) STORED AS DELTA LOCATION 's3://bucket/t' "
             "TBLPROPERTIES (\"delta.storage.azure.client.secret\"=\"hunter2-literal\", "
             "\"delta.storage.aws.region\"=\"eu-west-1\");")
    stored = ex.catalog.get_table("default", "t").properties
    assert "hunter2-literal" not in str(stored) and "${sealed:" in str(stored)
    shown = _run(ex, "DESCRIBE TABLE t;")
    assert "hunter2-literal" not in str(shown.to_json()) and "eu-west-1" in str(shown.to_json())
    sp = cspec.spec_of_table(ex.catalog.get_table("default", "t"))
    assert sp.storage_options()["AZURE_CLIENT_SECRET"] == "hunter2-literal"


def test_an_operators_object_store_location_lies_under_an_allowed_prefix(tmp_path):
    home = Home.open(tmp_path / "home", {ROOTS: "data,s3://bucket/lake,gs://g/x"})
    op = Executor(Catalog(home.catalog_url), home, role=Role.OPERATOR)
    for where in ("s3://bucket/other/t", "s3://other/lake/t", "s3://bucket/lakehouse/t",
                  "gs://g/y/t", "abfss://c@a.dfs.core.windows.net/lake/t",
                  "s3://bucket/lake/../secret/t"):
        with pytest.raises(PolicyError) as err:
            _run(op, f"CREATE TABLE t (a INT) STORED AS DELTA\nLOCATION '{where}';")
        assert ROOTS in err.value.message or ".." in err.value.message, where
        assert (err.value.line, err.value.column) == (2, 10), where
    _run(op, "CREATE TABLE a (a INT) STORED AS DELTA LOCATION 's3://bucket/lake/a';")
    _run(op, "CREATE TABLE b (a INT) STORED AS DELTA LOCATION 'gs://g/x/deep/b';")
    # the admin may name any store
    admin = Executor(Catalog(home.catalog_url), home)
    _run(admin, "CREATE TABLE c (a INT) STORED AS DELTA LOCATION 's3://elsewhere/c';")
    with pytest.raises(PolicyError):  # and a maintenance statement is checked the same way
        _run(op, "OPTIMIZE TABLE c;")


def test_time_travel_and_static_reads_refuse_an_object_store_table(tmp_path):
    from streamjob.connectors import lakehouse
    from streamjob.exceptions import ConnectorError

    sp = cspec.table_spec("t", {}, "delta", "s3://bucket/t", "/w")
    with pytest.raises(ConnectorError, match="local Delta tables"):
        lakehouse.version_as_of(sp, "version", "1")
    with pytest.raises(ConnectorError, match="not read here"):
        lakehouse.batch_version(sp, "uid", 1)
