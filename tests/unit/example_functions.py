"""The example user functions (examples/functions/*.py) in a home's function directory,
as an admin installs them (docs/functions.md): scripts of the corpus and of the docs
register them with CREATE FUNCTION. The example Hive UDF (examples/functions/*.java) is
compiled into ``text_udfs.jar`` there (the JDK's javac against pyspark's Hive jars)."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

from streamjob.home import Home
from streamjob_tools.dev.hive_jar import build_jar

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "functions"


def install(home: Home) -> Home:
    """Copy the example modules into ``<home>/functions``; returns ``home``."""
    functions = Path(home.root) / "functions"
    functions.mkdir(exist_ok=True)
    for module in EXAMPLES.glob("*.py"):
        (functions / module.name).write_bytes(module.read_bytes())
    (functions / JAR).write_bytes(_jar_bytes())
    return home


@functools.lru_cache(maxsize=1)
def _jar_bytes() -> bytes:
    """The example jar's bytes, compiled once per test process."""
    with tempfile.TemporaryDirectory() as tmp:
        return build_jar(sorted(EXAMPLES.glob("*.java")), Path(tmp) / JAR).read_bytes()


#: The example Hive UDF jar's name in the functions directory.
JAR = "text_udfs.jar"
