"""Nexmark events for streamjob (issue 19): a generator faithful to the reference one
(github.com/nexmark/nexmark, its Flink generator) and writers to Kafka topics and JSON
files. ``python -m streamjob_tools.dev nexmark --help``; examples/nexmark/README.md documents
the events, the streams and the queries."""

from .generator import Events, NexmarkConfig, format_times, generate
from .output import json_lines, to_files, to_kafka, topic_names

__all__ = ["Events", "NexmarkConfig", "format_times", "generate", "json_lines", "to_files",
           "to_kafka", "topic_names"]
