-- expect: 6:8: unknown stream or table 'default.clikcs'
CREATE STREAM clicks (a INT) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092");
CREATE TABLE t (a INT);
CREATE STREAMJOB j AS ("
  insert into t
  from clikcs select a")
