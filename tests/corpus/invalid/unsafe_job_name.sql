-- expect: 4:18: invalid job name '../../etc'
CREATE STREAM s (a INT) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092");
CREATE TABLE t (a INT);
CREATE STREAMJOB `../../etc` AS ("insert into t select a from s");
