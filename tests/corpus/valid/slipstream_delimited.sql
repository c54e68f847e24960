-- The shape of Transwarp Slipstream's own examples: a comma-delimited Kafka stream,
-- double-quoted properties, the old "kafka.zookeeper" property, a job with morphling.*
-- properties, then START / LIST / STOP / DROP.
CREATE STREAM demo_stream(id INT, name STRING, amount DOUBLE)
  ROW FORMAT DELIMITED FIELDS TERMINATED BY ','
  TBLPROPERTIES("topic"="demo", "kafka.zookeeper"="tdh1:2181", "kafka.broker.list"="tdh1:9092");

CREATE TABLE demo_table(id INT, name STRING, amount DOUBLE);

CREATE STREAMJOB demo_job AS ("INSERT INTO demo_table SELECT * FROM demo_stream")
  JOBPROPERTIES("morphling.result.auto.flush"="true",
                "morphling.job.enable.checkpoint"="true",
                "morphling.job.checkpoint.interval"="2000");

START STREAMJOB demo_job;
LIST STREAMJOBS;
STOP STREAMJOB demo_job;
DROP STREAMJOB demo_job;
DROP TABLE demo_table;
DROP STREAM demo_stream;
