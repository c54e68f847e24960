-- expect: 3:12: LOCATION 'hdfs://nn/events' is neither a local directory nor an object store
CREATE TABLE events (id BIGINT, kind STRING) STORED AS DELTA
  LOCATION 'hdfs://nn/events';
