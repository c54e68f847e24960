-- expect: 6:16: streamjob default.j does not exist
CREATE STREAM s (a INT) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092");
CREATE TABLE t (a INT);
CREATE STREAMJOB j AS ("insert into t select a from s");
DROP STREAMJOB j;
STOP STREAMJOB j;
