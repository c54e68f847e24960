"""The class-data sharing archive's bookkeeping (streamjob/spark/cds.py), without a JVM:
which options a start gets, who writes the archive, and when a written one is renamed
into place. tests/integration/test_cds.py shows a real driver JVM writing and mapping it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from streamjob.spark import cds

pytestmark = pytest.mark.unit


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv(cds.ENV, raising=False)
    final = cds.archive_path({}, None)
    assert final is not None and final.parent == tmp_path / "streamjob"
    return final


def test_the_first_start_claims_the_writing_and_the_next_maps_the_archive(cache):
    options, tmp = cds.java_options({}, None)
    assert options == f"-XX:ArchiveClassesAtExit={tmp} {cds.QUIET}"
    assert tmp.is_file() and tmp.name == f"{cache.name}.{os.getpid()}.tmp"  # claimed now
    tmp.write_bytes(b"archive")  # what the JVM writes at its exit
    tmp.rename(cache)
    options, tmp = cds.java_options({}, None, debug=True)
    assert options == f"-XX:SharedArchiveFile={cache} -Xshare:auto {cds.VERBOSE}" and tmp is None


def test_a_live_writer_is_left_alone_and_a_dead_ones_file_is_removed(cache):
    cache.parent.mkdir(parents=True)
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)
    live = cache.with_name(f"{cache.name}.{child.pid}.tmp")
    live.touch()
    try:
        assert cds.java_options({}, None) == ("", None)  # another process is writing it
    finally:
        child.stdin.close()
        child.wait(30)
    # its writer is gone now (killed while writing): the file is removed, this start writes
    options, tmp = cds.java_options({}, None)
    assert not live.exists() and tmp is not None and "ArchiveClassesAtExit" in options


def test_turned_off_or_chosen_by_the_user(cache, monkeypatch):
    for opts in ("-Xshare:off", "-XX:SharedArchiveFile=/x.jsa", "-XX:ArchiveClassesAtExit=/y"):
        assert cds.java_options({"spark.driver.extraJavaOptions": opts}, None) == ("", None)
    monkeypatch.setenv(cds.ENV, "0")
    assert cds.java_options({}, None) == ("", None)
    assert not cache.parent.exists()  # nothing claimed


def test_the_class_path_is_part_of_the_archive_name(cache):
    other = cds.archive_path({"spark.jars": "/opt/extra.jar"}, None)
    assert other != cache and other.parent == cache.parent


@pytest.mark.parametrize("code", [0, 3])
def test_finish_renames_only_after_a_clean_exit(cache, code):
    _, tmp = cds.java_options({}, None)
    # a process that, like pyspark's gateway JVM, runs until its stdin closes, then
    # writes the archive and exits with ``code``
    writer = subprocess.Popen(
        [sys.executable, "-c", f"import sys; sys.stdin.read(); "
                               f"open({str(tmp)!r}, 'wb').write(b'classes'); sys.exit({code})"],
        stdin=subprocess.PIPE)
    result = cds.finish_archive(writer, tmp)
    assert not tmp.exists()
    if code == 0:
        assert result == cache and cache.read_bytes() == b"classes"
    else:
        assert result is None and not cache.exists()
