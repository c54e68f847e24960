-- expect: 4:18: property 'topic' is given twice (first at line 2, column 40)
CREATE STREAM s (a INT) TBLPROPERTIES ("topic"="t",
                 "kafka.broker.list"="h:9092",
                 "TOPIC"="u");
