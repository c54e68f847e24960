-- expect: 6:33: streamjob default.j already has a savepoint keep
CREATE STREAM s (a INT) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092");
CREATE TABLE t (a INT);
CREATE STREAMJOB j AS ("insert into t select a from s");
CREATE SAVEPOINT keep FOR STREAMJOB j;
STOP STREAMJOB j WITH SAVEPOINT keep;
