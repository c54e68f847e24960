-- expect: 4:20: SerDe 'org.apache.hadoop.hive.serde2.RegexSerDe' is not supported
CREATE STREAM s (a INT) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092");
CREATE TABLE t (a INT)
  ROW FORMAT SERDE 'org.apache.hadoop.hive.serde2.RegexSerDe'
  WITH SERDEPROPERTIES ('input.regex'='(.*)');
