"""Slipstream's server-template engine settings (``spark.morphling.*`` of the StreamSQL
service's env template) in streamjob.conf: accepted, each with a one-line notice saying
why it has no effect; an unknown name is still an error with a suggestion."""

import pytest

from streamjob.exceptions import PropertyError
from streamjob.home import Home
from streamjob.properties import engine_notices

pytestmark = pytest.mark.unit

TEMPLATE = """# Slipstream server template
spark.morphling.recovery.mode=zookeeper
spark.morphling.taskstate.backend=hdfs
spark.morphling.zookeeper.session.timeout=30000
spark.morphling.zookeeper.connect.timeout=30000
spark.morphling.zookeeper.max.retries=3
spark.morphling.zookeeper.retry.wait=1000
spark.morphling.completed.checkpoints.storage.dir=/tmp/completed
spark.morphling.zookeeper.root.path=/morphling
"""


def test_template_settings_are_accepted_with_one_notice_each(tmp_path):
    (tmp_path / "streamjob.conf").write_text(TEMPLATE)
    home = Home.open(tmp_path)
    notes = engine_notices(home.conf)
    assert len(notes) == 7  # root.path is streamjob's own setting: no notice
    assert all(n.startswith("note: spark.morphling.") and " has no effect in streamjob: " in n
               for n in notes)
    assert any(n.startswith("note: spark.morphling.taskstate.backend has no effect") and
               "morphling.checkpoint.backend" in n for n in notes)
    assert not any(k.startswith("spark.morphling.") for k in home.spark_conf)


@pytest.mark.parametrize("line, words", [
    ("spark.morphling.recovery.mod=zookeeper", "did you mean 'spark.morphling.recovery.mode'"),
    ("morphling.zookeeper.quorum=zk:2181", "engine properties are spark.* or streamjob.*"),
])
def test_unknown_names_are_still_errors(tmp_path, line, words):
    (tmp_path / "streamjob.conf").write_text(line + "\n")
    with pytest.raises(PropertyError) as info:
        Home.open(tmp_path)
    assert words in info.value.message
