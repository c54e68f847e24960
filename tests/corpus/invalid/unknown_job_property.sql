-- expect: 9:3: unknown job property 'morphling.job.checkpoint.intervall'; did you mean 'morphling.job.checkpoint.interval'?
CREATE STREAM s (a INT) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092");
CREATE TABLE t (a INT);

CREATE STREAMJOB j AS ("insert into t select a from s")
JOBPROPERTIES (
  "morphling.result.auto.flush"="false",
  -- a typo in the next name
  "morphling.job.checkpoint.intervall"="1000"
);
