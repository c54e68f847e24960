-- expect: 4:18: Delta table 'events': unknown property 'delta.appendonlyy'; did you mean 'delta.appendonly'?
CREATE TABLE events (id BIGINT, kind STRING)
  STORED AS DELTA LOCATION '/tmp/streamjob-corpus/events'
  TBLPROPERTIES ("delta.appendOnlyy"="true");
