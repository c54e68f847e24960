-- expect: 2:73: the port of 'h:99999' must be between 1 and 65535
CREATE STREAM s (a INT) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:99999");
