-- expect: 5:32: unexpected 'group by' in the job's query, expected ')'
CREATE STREAM s (a INT) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092");
CREATE TABLE t (a INT);
CREATE STREAMJOB j AS ("insert into t
  select a from s where (a > 1 group by a");
