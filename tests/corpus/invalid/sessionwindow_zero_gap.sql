-- expect: 5:54: SESSIONWINDOW GAP must be a positive whole number
CREATE STREAM s (id STRING, a INT) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092");
CREATE TABLE t (id STRING, n BIGINT);
CREATE STREAMJOB j AS ("insert into t
  select id, count(*) from s SESSIONWINDOW w AS (GAP '0' SECOND) group by id");
