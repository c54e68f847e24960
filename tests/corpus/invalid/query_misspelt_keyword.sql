-- expect: 5:12: unexpected 'FORM' in the job's query (did you mean FROM?)
CREATE STREAM s (a INT) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092");
CREATE TABLE t (a INT);
CREATE STREAMJOB j AS ("insert into t
  select a FORM s");
