-- expect: 4:58: an aggregate function inside another aggregate cannot be planned
CREATE STREAM s (k STRING, v BIGINT) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092");
CREATE TABLE totals (k STRING, n BIGINT) TBLPROPERTIES ("connector"="sql", "url"="sqlite:///c.db", "primary.key"="k");
CREATE STREAMJOB j AS ("insert into totals select k, sum(count(v)) from s group by k");
