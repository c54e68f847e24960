-- expect: 6:34: streamjob default.j has no savepoint nope; it has: sp
CREATE STREAM s (a INT) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092");
CREATE TABLE t (a INT);
CREATE STREAMJOB j AS ("insert into t select a from s");
CREATE SAVEPOINT sp FOR STREAMJOB j;
START STREAMJOB j FROM SAVEPOINT nope;
