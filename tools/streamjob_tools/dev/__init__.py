"""Development helpers shared by the demo, the tests and the benchmarks: a local
Kafka-compatible broker (Tansu) and the NYC flights replay. Not used by jobs."""
