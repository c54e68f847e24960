-- expect: 3:22: the event-time column 'at' must be a timestamp, not string
CREATE STREAM s (at STRING) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092",
  "watermark.column"="at", "watermark.delay"="10 seconds");
