-- expect: 5:12: cannot drop table default.t: used by job default.copy_s (drop the job first)
CREATE STREAM s (a INT) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092");
CREATE TABLE t (a INT);
CREATE STREAMJOB copy_s AS ("insert into t select a from s");
drop table t;
