-- expect: 5:52: property 'morphling.job.checkpoint.interval' must be between 0 ms and 7 days, got '99999999999999999999999'
CREATE STREAM s (a INT) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092");
CREATE TABLE t (a INT);
CREATE STREAMJOB j AS ("insert into t select a from s")
JOBPROPERTIES ("morphling.job.checkpoint.interval"="99999999999999999999999");
