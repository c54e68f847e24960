-- expect: 5:79: a LEFT OUTER join of two streams (default.a, default.b) needs a watermark on both
CREATE STREAM a (id BIGINT, ts TIMESTAMP) TBLPROPERTIES ("topic"="a", "kafka.broker.list"="h:9092");
CREATE STREAM b (id BIGINT, ts TIMESTAMP) TBLPROPERTIES ("topic"="b", "kafka.broker.list"="h:9092");
CREATE TABLE joined (id BIGINT, other BIGINT) STORED AS PARQUET;
CREATE STREAMJOB j AS ("insert into joined select a.id, b.id from a left join b on a.id = b.id");
