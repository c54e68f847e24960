-- The lakehouse pipeline, stage 1 of 3: NYC flights from Kafka into the bronze Delta
-- table, every flight as it came. Variables: ${FLIGHTS_BROKER}, ${STREAMJOB_HOME}.
CREATE STREAM IF NOT EXISTS flights (
  year INT, month INT, day INT,
  dep_time INT, dep_delay DOUBLE,
  arr_time INT, arr_delay DOUBLE,
  carrier STRING, flight INT, tailnum STRING,
  origin STRING, dest STRING,
  air_time DOUBLE, distance DOUBLE
)
TBLPROPERTIES("topic"="flights", "kafka.broker.list"="${FLIGHTS_BROKER:-127.0.0.1:9092}",
              "format"="json");

CREATE TABLE IF NOT EXISTS flights_bronze (
  year INT, month INT, day INT, carrier STRING, flight INT, origin STRING, dest STRING,
  dep_delay DOUBLE, arr_delay DOUBLE, distance DOUBLE
)
PARTITIONED BY (origin)
STORED AS DELTA LOCATION '${STREAMJOB_HOME}/warehouse/lakehouse/flights_bronze';

CREATE STREAMJOB IF NOT EXISTS bronze_job AS ("
  insert into flights_bronze
  select year, month, day, carrier, flight, origin, dest, dep_delay, arr_delay, distance
  from flights")
JOBPROPERTIES("morphling.result.auto.flush"="false",            -- exactly-once
              "morphling.job.max.records.per.batch"="${MAX_RECORDS_PER_BATCH:-100000}");

START STREAMJOB bronze_job;
