from streamjob.connectors.kafka_source import _cap, parse_offsets
from streamjob.checkpoint.recorder import merge_offsets
from streamjob.manager.idle import reached


def test_cap_spreads_limit_over_backlog():
    start = {0: 0, 1: 100, 2: 50}
    ends = {0: 1000, 1: 100, 2: 1050}
    capped = _cap(start, ends, 100)
    assert capped == {0: 50, 1: 100, 2: 100}
    assert sum(capped[p] - start[p] for p in start) <= 100


def test_cap_no_limit_needed_and_tiny_limit_still_progresses():
    assert _cap({0: 0}, {0: 10}, 100) == {0: 10}
    assert _cap({0: 0, 1: 0}, {0: 1000, 1: 1000}, 1) == {0: 1, 1: 1}


def test_merge_offsets_by_topic_and_idle_check():
    merged = merge_offsets([("kafka a", '{"t": {"0": 5, "1": 7}}'), ("rate", '{"x": 1}'),
                            ("kafka b", {"u": {"0": 3}})])
    assert merged["t"] == {"0": 5, "1": 7} and merged["u"] == {"0": 3}
    assert reached(merged, {"t": {"0": 5, "1": 7}})
    assert not reached(merged, {"t": {"0": 6, "1": 7}})
    assert reached({}, {"t": {"0": 0}})  # an empty partition is idle from the start
    assert parse_offsets('{"t": {"0": "4"}}') == {"t": {"0": 4}}
