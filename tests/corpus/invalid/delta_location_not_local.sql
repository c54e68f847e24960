-- expect: 3:12: LOCATION 's3://bucket/events' is not a local directory
CREATE TABLE events (id BIGINT, kind STRING) STORED AS DELTA
  LOCATION 's3://bucket/events';
