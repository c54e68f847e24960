-- expect: 2:8: unexpected 'STRAEM'
CREATE STRAEM s (a INT) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092");
