"""Kafka streams and tables: the source (reads, offsets, decoding of records,
malformed-record policies and dead letters, consumer-group commits), the sink, and the
security settings every client of theirs takes."""
