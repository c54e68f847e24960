-- expect: 3:46: property 'watermark.delay' must be a Spark interval ('10 seconds') of at most 30 days
CREATE STREAM s (a INT, ts TIMESTAMP) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092",
  "watermark.column"="ts", "watermark.delay"="99999999999999999999999 seconds");
