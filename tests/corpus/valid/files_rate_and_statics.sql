-- File and rate streams, file tables of every format, a stream-static join.
CREATE STREAM readings (sensor STRING, reading DOUBLE, at TIMESTAMP)
TBLPROPERTIES ("source"="files", "path"="/tmp/streamjob-corpus/readings", "format"="json");

CREATE STREAM ticks (timestamp TIMESTAMP, value BIGINT)
TBLPROPERTIES ("source"="rate", "rows.per.second"="100");

CREATE TABLE sensors (sensor STRING, room STRING) STORED AS CSV
  LOCATION '/tmp/streamjob-corpus/sensors' TBLPROPERTIES ("skip.header.line.count"="1");

CREATE TABLE room_readings (room STRING, reading DOUBLE, at TIMESTAMP) STORED AS PARQUET;
CREATE TABLE tick_log (value BIGINT) STORED AS CSV LOCATION 'file:///tmp/streamjob-corpus/ticks';
CREATE TABLE console_out (value BIGINT) TBLPROPERTIES ("connector"="console");

CREATE STREAMJOB room_job AS ("insert into room_readings
  select s.room, r.reading, r.at from readings r join sensors s on r.sensor = s.sensor");
CREATE STREAMJOB tick_job AS ("insert into tick_log select value from ticks where value % 2 = 0")
  JOBPROPERTIES ("morphling.job.enable.checkpoint"="false");
CREATE STREAMJOB IF NOT EXISTS tick_job AS ("insert into console_out select value from ticks");

DROP STREAMJOB IF EXISTS no_such_job;
DROP TABLE IF EXISTS no_such_table;
DROP STREAM IF EXISTS no_such_stream;
