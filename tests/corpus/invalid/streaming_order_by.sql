-- expect: 4:65: ORDER BY cannot run on a stream
CREATE STREAM s (k STRING, v BIGINT) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092");
CREATE TABLE rows_out (k STRING, v BIGINT) STORED AS PARQUET;
CREATE STREAMJOB j AS ("insert into rows_out select k, v from s order by v");
