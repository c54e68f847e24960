-- expect: 3:25: partition column 'dt' is not a column of the table
CREATE TABLE events (id BIGINT, kind STRING)
  PARTITIONED BY (kind, dt)
  STORED AS PARQUET;
