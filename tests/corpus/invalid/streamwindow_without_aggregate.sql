-- expect: 5:19: STREAMWINDOW needs an aggregation
CREATE STREAM s (a INT) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092");
CREATE TABLE t (a INT);
CREATE STREAMJOB j AS ("insert into t
  select a from s STREAMWINDOW w AS (LENGTH '10' SECOND)");
