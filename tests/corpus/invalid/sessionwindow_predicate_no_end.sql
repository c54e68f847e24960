-- expect: 5:30: SESSIONWINDOW needs END[<condition>] or TIMEOUT
CREATE STREAM s (id STRING, a INT) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092");
CREATE TABLE t (id STRING, n BIGINT);
CREATE STREAMJOB j AS ("insert into t
  select id, count(*) from s SESSIONWINDOW(INIT[a > 1] KEYEDBY(id))
  group by id");
