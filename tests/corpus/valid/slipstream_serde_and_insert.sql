-- Older Slipstream scripts (issue 18): a MultiDelimitSerDe stream, a JSON SerDe table,
-- ORC and TEXTFILE file tables, and bare INSERTs that start implicit jobs.
CREATE STREAM trades (id INT, sym STRING, px DOUBLE)
  ROW FORMAT SERDE 'org.apache.hadoop.hive.contrib.serde2.MultiDelimitSerDe'
  WITH SERDEPROPERTIES ('input.delimited'='|+|')
  TBLPROPERTIES ("topic"="trades", "kafka.broker.list"="tdh1:9092");

CREATE TABLE trades_json (id INT, sym STRING, px DOUBLE)
  ROW FORMAT SERDE 'org.apache.hive.hcatalog.data.JsonSerDe' STORED AS TEXTFILE;
CREATE TABLE trades_orc (id INT, sym STRING, px DOUBLE) STORED AS ORC;
CREATE TABLE trades_text (id INT, sym STRING, px DOUBLE)
  ROW FORMAT DELIMITED FIELDS TERMINATED BY ',';

INSERT INTO trades_json SELECT * FROM trades;
INSERT INTO TABLE trades_orc SELECT id, upper(sym), px FROM trades WHERE px > 0;
insert into trades_text select * from trades;
LIST STREAMJOBS;
