"""Build a jar of Hive UDF classes from Java sources with the JDK's ``javac`` and ``jar``,
against the Hive and Hadoop jars PySpark ships (``pyspark/jars``): the jars of the tests
and examples of docs/functions.md ("Hive UDF jars")."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

#: The jars of pyspark/jars a Hive UDF compiles against (name prefixes).
CLASSPATH = ("hive-exec-", "hive-serde-", "hadoop-client-api-")


def _classpath() -> str:
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    found = [str(j) for prefix in CLASSPATH for j in sorted(jars.glob(prefix + "*.jar"))]
    if len(found) < len(CLASSPATH):
        raise RuntimeError(f"pyspark's jars ({jars}) lack one of {', '.join(CLASSPATH)}")
    return ":".join(found)


def build_jar(sources: list[Path], jar: Path) -> Path:
    """Compile ``sources`` (``.java`` files) and pack their classes into ``jar``
    (created, with its directory); returns ``jar``.

    Raises:
        RuntimeError: no ``javac``/``jar`` on PATH, or the compiler's error text.
    """
    javac, packer = shutil.which("javac"), shutil.which("jar")
    if javac is None or packer is None:
        raise RuntimeError("a JDK's javac and jar are needed to build Hive UDF jars")
    jar.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="hive-udf-") as classes:
        done = subprocess.run([javac, "-nowarn", "-d", classes, "-cp", _classpath(),
                               *map(str, sources)], capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"javac failed: {done.stderr.strip()}")
        subprocess.run([packer, "cf", str(jar), "-C", classes, "."], check=True)
    return jar
