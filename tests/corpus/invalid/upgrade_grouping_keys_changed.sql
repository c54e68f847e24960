-- expect: 6:2: incompatible change: streaming aggregation: its grouping keys change (name removed; id added)
CREATE STREAM s (id INT, name STRING) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092");
CREATE TABLE t (name STRING, n BIGINT) TBLPROPERTIES ("connector"="sql", "url"="sqlite:////tmp/x.db", "primary.key"="name");
CREATE STREAMJOB j AS ("insert into t select name, count(*) from s group by name");
ALTER STREAMJOB j AS (
"insert into t select cast(id as string), count(*) from s group by id");
