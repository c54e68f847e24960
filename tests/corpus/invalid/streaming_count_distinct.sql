-- expect: 4:54: count(DISTINCT ...) cannot run on a stream: Spark does not support distinct aggregations
CREATE STREAM s (k STRING, v BIGINT) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092");
CREATE TABLE counts (k STRING, n BIGINT) TBLPROPERTIES ("connector"="sql", "url"="sqlite:///c.db", "primary.key"="k");
CREATE STREAMJOB j AS ("insert into counts select k, count(distinct v) from s group by k");
