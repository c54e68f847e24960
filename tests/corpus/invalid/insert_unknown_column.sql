-- expect: 5:12: unknown column 'nmae'
CREATE STREAM s (id INT, name STRING) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092");
CREATE TABLE t (id INT, name STRING);
INSERT INTO t
SELECT id, nmae FROM s;
