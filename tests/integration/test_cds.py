"""Spark's driver JVM with a class-data sharing archive (streamjob/spark/cds.py), for
real: the first ``streamjob`` process that starts Spark on a machine writes the archive
as its JVM exits, quietly; the next one maps it (the JVM says so under --debug). Each
process has a fresh per-user cache here, so the machine's own archive is not touched."""

from __future__ import annotations

import pytest

from .conftest import FLIGHTS_SQL, Cli

pytestmark = [pytest.mark.system, pytest.mark.slow]  # two Spark starts, one writing 150 MB


def test_the_first_start_writes_the_archive_and_the_next_maps_it(broker, tmp_path):
    cli = Cli(tmp_path / "home", broker.bootstrap)  # check reads no records: no replay
    cli.prepare_home()
    cache = tmp_path / "cache"
    args = ("check", str(FLIGHTS_SQL))  # check asks Spark's streaming analysis
    first = cli.run(*args, XDG_CACHE_HOME=cache)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "[cds]" not in first.stdout + first.stderr  # the JVM's notes stay off the terminal
    [archive] = (cache / "streamjob").glob("cds-*.jsa")
    assert archive.stat().st_size > 10 << 20
    assert not list((cache / "streamjob").glob("*.tmp"))  # renamed into place, no leftovers

    second = cli.run("--debug", *args, XDG_CACHE_HOME=cache)
    assert second.returncode == 0, second.stdout + second.stderr
    out = second.stdout + second.stderr
    assert f"Opened archive {archive}." in out
    assert "Mapped dynamic region" in out and "Unable to use shared archive" not in out
