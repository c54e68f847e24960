-- expect: 5:35: checkpoint 3 of streamjob default.j is not retained; it has no retained checkpoints
CREATE STREAM s (a INT) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092");
CREATE TABLE t (a INT);
CREATE STREAMJOB j AS ("insert into t select a from s");
START STREAMJOB j FROM CHECKPOINT 3;
