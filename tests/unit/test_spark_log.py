"""Where Spark's JVM writes (issue 16): ``<home>/logs/spark.log``, not the terminal; a JVM
that cannot start is one error naming why and the log. No JVM starts here: ``java`` is
missing (JAVA_HOME names nothing), so Spark's launcher script fails at once."""

from __future__ import annotations

import pytest

from streamjob.exceptions import StreamJobError
from streamjob.home import Home
from streamjob.spark import session

pytestmark = pytest.mark.component


def test_a_jvm_that_cannot_start_is_one_error_naming_why_and_the_log(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-java"))
    # a JVM an earlier test of this process started (both folders in one session) is
    # reused, not launched: this test's launch must not see it
    from pyspark import SparkContext

    monkeypatch.setattr(SparkContext, "_gateway", None)
    for name in ("PYSPARK_GATEWAY_PORT", "PYSPARK_GATEWAY_SECRET"):
        monkeypatch.delenv(name, raising=False)
    home = Home.open(tmp_path / "home", {"spark.master": "local[1]"})
    log = session.spark_log(home)
    assert log == home.root / "logs" / "spark.log"
    log.parent.mkdir()
    log.write_text("an earlier JVM's line\n")
    with pytest.raises(StreamJobError) as err:
        session._launch_gateway({"spark.master": "local[1]"}, log=log)
    message = str(err.value)
    assert message.startswith("Spark's JVM did not start: ") and str(log) in message
    assert "no-java/bin/java" in message  # the launcher's own words, not pyspark's
    assert "an earlier JVM's line" not in message
    text = log.read_text()
    assert text.startswith("an earlier JVM's line\n--- ")  # appended, with a header
    assert "no-java/bin/java" in text
    out, errors = capfd.readouterr()
    assert "java" not in out + errors  # nothing on the terminal
