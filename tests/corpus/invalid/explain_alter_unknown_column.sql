-- expect: 5:53: nope
CREATE STREAM s (id INT, name STRING) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092");
CREATE TABLE t (name STRING, n BIGINT) TBLPROPERTIES ("connector"="sql", "url"="sqlite:////tmp/x.db", "primary.key"="name");
CREATE STREAMJOB j AS ("insert into t select name, count(*) from s group by name");
EXPLAIN ALTER STREAMJOB j AS ("insert into t select nope, count(*) from s group by nope");
