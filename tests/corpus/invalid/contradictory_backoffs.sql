-- expect: 5:16: contradictory job properties: streamjob.failover.initial.backoff=60000 (from JOBPROPERTIES) with streamjob.failover.max.backoff=30000 (from default)
CREATE STREAM s (a INT) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092");
CREATE TABLE t (a INT);
CREATE STREAMJOB j AS ("insert into t select a from s")
JOBPROPERTIES ("streamjob.failover.initial.backoff"="60000");
