-- expect: 4:3: property 'field.delim' is given twice (first at line 3, column 95)
CREATE STREAM s (a INT, b STRING)
  ROW FORMAT SERDE 'org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe' WITH SERDEPROPERTIES ("field.delim"=",",
  "field.delim"="|")
  TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092");
