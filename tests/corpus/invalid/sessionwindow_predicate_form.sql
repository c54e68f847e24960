-- expect: 5:44: predicate sessions are not supported yet
CREATE STREAM s (id STRING, a INT) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092");
CREATE TABLE t (id STRING, n BIGINT);
CREATE STREAMJOB j AS ("insert into t
  select id, count(*) from s SESSIONWINDOW(INIT[a > 1] END[a < 0 EXCLUDE] KEYEDBY(id))
  group by id");
