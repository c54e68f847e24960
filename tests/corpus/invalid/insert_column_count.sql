-- expect: 4:46: the select gives 1 columns but table default.t has 2 (a, b); INSERT maps columns by position
CREATE STREAM s (a INT, b INT) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092");
CREATE TABLE t (a INT, b INT);
CREATE STREAMJOB j AS ("insert into t select a from s");
