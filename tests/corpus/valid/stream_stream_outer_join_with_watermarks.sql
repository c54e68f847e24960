CREATE STREAM a (id BIGINT, ts TIMESTAMP) TBLPROPERTIES ("topic"="a", "kafka.broker.list"="h:9092", "watermark.column"="ts", "watermark.delay"="10 seconds");
CREATE STREAM b (id BIGINT, ts TIMESTAMP) TBLPROPERTIES ("topic"="b", "kafka.broker.list"="h:9092", "watermark.column"="ts", "watermark.delay"="10 seconds");
CREATE TABLE joined (id BIGINT, other BIGINT) STORED AS PARQUET;
CREATE STREAMJOB j AS ("insert into joined select a.id, b.id from a left join b on a.id = b.id and b.ts between a.ts and a.ts + interval 1 hour");
