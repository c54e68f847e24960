"""Sources and sinks: the Kafka source, record formats, the SQL sink, connector specs."""
