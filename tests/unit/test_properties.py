import pytest

from streamjob import properties as jp
from streamjob.exceptions import PropertyError


def test_values_parse_as_users_write_them():
    v = jp.values({"morphling.job.enable.checkpoint": "TRUE",
                   "morphling.job.checkpoint.interval": " 60000 ",
                   "morphling.checkpoint.backend": "ZooKeeper"})
    assert v["morphling.job.enable.checkpoint"] is True
    assert v["morphling.job.checkpoint.interval"] == 60000
    assert v["morphling.checkpoint.backend"] == "zookeeper"


def test_unknown_property_suggests_nearest():
    with pytest.raises(PropertyError, match="did you mean 'morphling.job.checkpoint.interval'"):
        jp.validate({"morphling.job.checkpoint.intervall": "1000"})


def test_wrong_type_and_range_name_property_value_and_rule():
    with pytest.raises(PropertyError, match=r"'morphling.job.checkpoint.interval' must be an integer \(ms\), got 'soon'"):
        jp.validate({"morphling.job.checkpoint.interval": "soon"})
    with pytest.raises(PropertyError, match=r"must be >= 0 or -1 \(never restart\), got -2"):
        jp.validate({"morphling.task.max.failures": "-2"})
    with pytest.raises(PropertyError, match="true or false, got 'yes'"):
        jp.validate({"morphling.result.auto.flush": "yes"})
    assert jp.validate({"morphling.task.max.failures": "-1"}) == {"morphling.task.max.failures": "-1"}


def test_layering_and_origin():
    eff = jp.effective({"morphling.checkpoint.retained": "3"},
                       {"morphling.checkpoint.retained": "7", "morphling.result.auto.flush": "true"})
    assert eff["morphling.checkpoint.retained"] == jp.Effective(3, "JOBPROPERTIES")
    assert eff["morphling.result.auto.flush"] == jp.Effective(True, "SET")
    assert eff["morphling.job.checkpoint.interval"] == jp.Effective(10000, "default")


@pytest.mark.parametrize("props,expected", [
    ({}, "exactly-once"),
    ({"morphling.result.auto.flush": "true"}, "at-least-once"),
    ({"morphling.job.enable.checkpoint": "false"}, "none"),
])
def test_guarantee(props, expected):
    assert jp.guarantee(jp.values(props)) == expected
