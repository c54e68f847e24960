-- expect: 3:25: STORED AS ICEBERG says what the stream reads; drop "path"
CREATE STREAM events (id BIGINT, kind STRING) STORED AS ICEBERG
  TBLPROPERTIES ("path"="/tmp/streamjob-corpus/events");
