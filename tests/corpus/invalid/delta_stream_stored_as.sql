-- expect: 3:3: a stream is STORED AS DELTA or ICEBERG only
CREATE STREAM p (id BIGINT)
  STORED AS PARQUET LOCATION '/tmp/streamjob-corpus/p';
