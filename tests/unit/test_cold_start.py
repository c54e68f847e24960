"""The cold ``streamjob run`` path of issue 19 (workload A of the Flink side by side):
the interpreter's exit skips collecting the heap again (``cli/exit.py``), checking
statements does not import pyarrow, Spark's start imports pandas while its JVM starts,
and a file is parsed once."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from click.testing import CliRunner

pytestmark = pytest.mark.unit


def _python(code: str, tmp_path) -> str:
    """Run ``code`` in a fresh interpreter (this checkout first on sys.path); its stdout."""
    import os
    from pathlib import Path

    repo = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([repo, os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_the_cli_freezes_the_heap_at_exit_after_the_commands_handlers(tmp_path):
    # an exit handler registered before the CLI runs runs after the CLI's: it sees the
    # heap frozen, so the interpreter's shutdown collections skip it
    out = _python(f"""
        import atexit, gc
        atexit.register(lambda: print("frozen", gc.get_freeze_count() > 0))
        from streamjob.cli import main
        try:
            main(["--home", {str(tmp_path / 'home')!r}, "list"])
        except SystemExit as exc:
            print("exit", exc.code)
        print("before exit", gc.get_freeze_count())
        """, tmp_path)
    assert "exit 0" in out
    assert "before exit 0" in out  # nothing frozen while the command runs
    assert out.strip().splitlines()[-1] == "frozen True"


def test_freeze_at_exit_registers_once(monkeypatch):
    import atexit
    import gc

    from streamjob.cli import exit as cli_exit

    registered = []
    monkeypatch.setattr(atexit, "register", registered.append)
    monkeypatch.setattr(cli_exit, "_registered", False)
    assert cli_exit.freeze_at_exit() is True
    assert cli_exit.freeze_at_exit() is False
    assert registered == [gc.freeze]


def test_checking_statements_does_not_import_pyarrow(tmp_path):
    # the modules `run` imports before Spark starts: pyarrow comes later, beside the JVM
    out = _python("""
        import sys
        import streamjob.cli, streamjob.client.session, streamjob.manager, streamjob.executor
        import streamjob.connectors.spec, streamjob.columntypes, streamjob.client.check
        print("pyarrow" in sys.modules)
        """, tmp_path)
    assert out.strip() == "False"


def test_arrow_types_are_the_same_as_before():
    import pyarrow as pa

    from streamjob.columntypes import arrow_schema, arrow_type

    expected = {"tinyint": pa.int8(), "byte": pa.int8(), "smallint": pa.int16(),
                "short": pa.int16(), "int": pa.int32(), "integer": pa.int32(),
                "bigint": pa.int64(), "long": pa.int64(), "float": pa.float32(),
                "real": pa.float32(), "double": pa.float64(), "boolean": pa.bool_(),
                "bool": pa.bool_(), "string": pa.string(), "binary": pa.binary(),
                "date": pa.date32(), "timestamp": pa.timestamp("us", tz="UTC"),
                "DECIMAL(10, 2)": pa.decimal128(10, 2), "decimal": pa.decimal128(10, 0),
                "varchar(5)": pa.string()}
    for text, typ in expected.items():
        assert arrow_type(text) == typ, text
    assert arrow_schema([{"name": "a", "type": "bigint"}]) == pa.schema([("a", pa.int64())])


def test_the_kafka_formats_are_the_same_names_in_both_places():
    from streamjob.connectors import kafka
    from streamjob.connectors.kafka import formats

    assert formats.FORMATS is kafka.FORMATS == ("json", "delimited", "raw")


def test_spark_start_imports_what_sparkconf_imports_beside_the_jvm():
    # pyspark's SparkConf converts its arguments through NumpyArrayConverter.can_convert,
    # which imports pyspark.testing.utils (pandas): the launch imports it beforehand
    import inspect

    from pyspark.sql.types import NumpyArrayConverter

    from streamjob.spark.session import LAUNCH_IMPORTS

    source = inspect.getsource(NumpyArrayConverter.can_convert)
    assert any(name in source for name in LAUNCH_IMPORTS)


def test_import_beside_imports_on_a_thread_and_skips_what_fails():
    from streamjob.spark.session import _import_beside

    thread = _import_beside(["no_such_module_sj20", "colorsys"])
    thread.join(30)
    assert not thread.is_alive()
    assert "colorsys" in sys.modules


def test_a_file_is_parsed_once(tmp_path, monkeypatch):
    from streamjob import grammar
    from streamjob.cli import main

    calls = []
    real = grammar.parse_script

    def counting(text, *args, **kwargs):
        calls.append(text)
        return real(text, *args, **kwargs)

    monkeypatch.setattr(grammar, "parse_script", counting)
    script = tmp_path / "s.sql"
    script.write_text("CREATE STREAM s (value BIGINT) TBLPROPERTIES(\"source\"=\"rate\");\n"
                      "CREATE TABLE t (a INT) TBLPROPERTIES(\"connector\"=\"console\");\n")
    result = CliRunner().invoke(main, ["--home", str(tmp_path / "home"), "submit", str(script)])
    assert result.exit_code == 0, result.output
    assert len(calls) == 1
