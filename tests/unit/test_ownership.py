"""Issue 13, point 3: what DROP may delete. Names match whole (``j\\n`` was accepted by
``^...$``), a relative checkpoint root is the home's (it was the client's working
directory), and a file table inside the checkpoint root is refused (DROP STREAMJOB of a
same-named job deleted its data). Each failed on the main of 2026-11-23."""

from __future__ import annotations

import os

import pytest

from streamjob.catalog import Catalog
from streamjob.exceptions import ParseError, ValidationError
from streamjob.executor import Executor
from streamjob.grammar import parse_script
from streamjob.home import CHECKPOINT_DIR_KEY, Home, validate_name

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("name", ["j\n", "j\r\n", "a.b", "../x", "", "1j"])
def test_names_must_match_whole(name):
    with pytest.raises(ValidationError):
        validate_name(name, "job name")


def test_a_relative_checkpoint_root_is_relative_to_the_home(tmp_path, monkeypatch):
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    home = Home.open(tmp_path / "home", {CHECKPOINT_DIR_KEY: "ck"})
    assert home.checkpoint_root == str((tmp_path / "home" / "ck").resolve())
    assert home.checkpoint_dir("default", "j") == f"{(tmp_path / 'home' / 'ck').resolve()}/default/j"
    assert not os.path.exists(elsewhere / "ck")


@pytest.mark.parametrize("location", ["{root}/default/j", "{root}", "{home}", "file://{root}/x"])
def test_a_file_table_may_not_overlap_the_checkpoint_root(tmp_path, location):
    home = Home.open(tmp_path / "home", {})
    ex = Executor(Catalog(home.catalog_url), home)
    where = location.format(root=home.checkpoint_root, home=home.root)
    with pytest.raises(ValidationError) as e:
        for stmt in parse_script(f"CREATE TABLE t (a INT) STORED AS PARQUET LOCATION '{where}';"):
            ex.execute(stmt)
    assert "overlaps the checkpoint root" in str(e.value)
    [ok] = parse_script(f"CREATE TABLE u (a INT) STORED AS PARQUET LOCATION '{tmp_path / 'data'}';")
    ex.execute(ok)


def test_a_lost_catalog_is_not_silently_recreated_over_checkpoints(tmp_path):
    """Issue 13 point 7: a deleted or emptied catalog was recreated without a word while
    the home held its jobs' checkpoints (main of 2026-11-23)."""
    from click.testing import CliRunner

    from streamjob.cli import main

    home = tmp_path / "home"
    for log_name in ("offsets", "commits"):
        (home / "checkpoints" / "default" / "late" / log_name).mkdir(parents=True)
        (home / "checkpoints" / "default" / "late" / log_name / "7").write_text("v1\n")

    def cli(*args, **env):
        return CliRunner().invoke(main, list(args), env={"STREAMJOB_HOME": str(home), **env})

    refused = cli("list")
    assert refused.exit_code == 1
    assert "holds no streamjobs" in refused.stderr and "default.late" in refused.stderr
    assert "--new-catalog" in refused.stderr
    assert cli("--new-catalog", "list").exit_code == 0
    assert cli("list", STREAMJOB_NEW_CATALOG="1").exit_code == 0


def test_a_location_with_a_nul_byte_is_a_located_error(tmp_path):
    """Found by the byte fuzz: a NUL in LOCATION escaped as ValueError from pathlib.
    Since issue 28 a NUL anywhere in a script is refused when it is read, at its place."""
    with pytest.raises(ParseError) as e:
        parse_script("CREATE TABLE t (a INT) STORED AS PARQUET\nLOCATION '/tmp/x\x00y';")
    assert "NUL" in str(e.value) and (e.value.line, e.value.column) == (2, 17)
