-- expect: 6:13: time travel (VERSION/TIMESTAMP AS OF) is not supported
CREATE STREAM clicks (id BIGINT) TBLPROPERTIES ("topic"="clicks",
  "kafka.broker.list"="127.0.0.1:9092", "format"="json");
CREATE TABLE lake (id BIGINT) STORED AS DELTA LOCATION '/tmp/tt_lake';
CREATE STREAMJOB tt AS ("insert into lake select c.id from clicks c
  join lake VERSION AS OF 3 l on c.id = l.id");
