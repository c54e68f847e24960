"""The lines ``streamjob server`` prints about itself (issue 16): the local time first,
as Flink's and Kafka's logs and Python logging's ``asctime`` have it, and every line and
WARNING record in ``<home>/logs/server.log`` too."""

from __future__ import annotations

import logging
import re
import time

import pytest

from streamjob.home import Home
from streamjob.manager.serverlog import ServerLog, server_log, stamp

pytestmark = pytest.mark.unit

STAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} ")


def test_stamp_is_local_time_with_milliseconds_as_logging_asctime():
    now = 1_764_081_001.123  # an instant with 123 ms
    expected = logging.Formatter().formatTime(logging.makeLogRecord({"created": now,
                                                                    "msecs": 123.0}))
    assert stamp(now) == expected == time.strftime("%Y-%m-%d %H:%M:%S,123",
                                                   time.localtime(now))


def test_lines_are_stamped_printed_and_appended_with_warnings(tmp_path):
    home = Home.open(tmp_path / "home")
    path = server_log(home)
    assert path == home.root / "logs" / "server.log"
    printed: list[str] = []
    report = ServerLog(path, printed.append).attach()
    try:
        report("server h:1:ab: active (holds the job manager lease)")
        logging.getLogger("streamjob.test").warning("a warning")
        logging.getLogger("streamjob.test").info("not at INFO")  # the root logger's level
    finally:
        report.close()
    report("after close: printed, not written")
    assert len(printed) == 2 and all(STAMP.match(line) for line in printed), printed
    assert printed[0].endswith(" server h:1:ab: active (holds the job manager lease)")
    logged = path.read_text().splitlines()
    assert logged[0] == printed[0]
    assert STAMP.match(logged[1]) and logged[1].endswith(" WARNING streamjob.test: a warning")
    assert len(logged) == 2, logged
    # a second server on the home appends
    again = ServerLog(path, printed.append)
    again("standby: server h:1:ab holds the lease")
    again.close()
    assert len(path.read_text().splitlines()) == 3
