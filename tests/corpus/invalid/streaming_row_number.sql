-- expect: 4:54: a window function with OVER (...) cannot run on a stream
CREATE STREAM s (k STRING, v BIGINT) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092");
CREATE TABLE ranked (k STRING, n INT) STORED AS PARQUET;
CREATE STREAMJOB j AS ("insert into ranked select k, row_number() over (partition by k order by v) from s");
