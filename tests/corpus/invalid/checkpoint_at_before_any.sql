-- expect: 5:38: streamjob default.j has no retained checkpoint or savepoint
CREATE STREAM s (a INT) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092");
CREATE TABLE t (a INT);
CREATE STREAMJOB j AS ("insert into t select a from s");
START STREAMJOB j FROM CHECKPOINT AT '2026-11-27 10:00:00';
