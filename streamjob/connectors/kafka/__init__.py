"""Kafka streams and tables: the source (reads, offsets, decoding of records,
malformed-record policies and dead letters, consumer-group commits), the sink, and the
security settings every client of theirs takes."""

#: A Kafka stream's record formats (``"format"``). Here rather than in :mod:`.formats`,
#: which imports pyarrow: checking a statement needs only the names (issue 19).
FORMATS = ("json", "delimited", "raw")
