-- expect: 4:18: the query aggregates, so its results change as data arrives: give table default.counts a primary key
CREATE STREAM s (k STRING) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092");
CREATE TABLE counts (k STRING, n BIGINT) STORED AS PARQUET;
CREATE STREAMJOB count_job AS ("insert into counts select k, count(*) from s group by k");
