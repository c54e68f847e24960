-- expect: 3:18: "delta.storage.*" options are for a LOCATION on an object store
CREATE TABLE events (id BIGINT) STORED AS DELTA LOCATION '/tmp/events'
  TBLPROPERTIES ("delta.storage.aws.region"="eu-west-1");
