-- NYC flights of 2013, replayed into Kafka, as a Slipstream user writes it.
-- Variables: ${FLIGHTS_BROKER} (the Kafka bootstrap address) and ${STREAMJOB_HOME}.

-- every flight, one JSON object per Kafka record
CREATE STREAM IF NOT EXISTS flights (
  year INT, month INT, day INT,
  dep_time INT, dep_delay DOUBLE,
  arr_time INT, arr_delay DOUBLE,
  carrier STRING, flight INT, tailnum STRING,
  origin STRING, dest STRING,
  air_time DOUBLE, distance DOUBLE
)
TBLPROPERTIES(
  "topic"="flights",
  "kafka.broker.list"="${FLIGHTS_BROKER:-127.0.0.1:9092}",   -- bootstrap servers
  "format"="json",
  "transwarp.consumer.reset.offset.strategy"="earliest"
);

-- carrier code -> airline name: static data, read in full at each batch
CREATE TABLE IF NOT EXISTS airlines (carrier STRING, name STRING)
STORED AS CSV
LOCATION '${STREAMJOB_HOME}/data/airlines'
TBLPROPERTIES("skip.header.line.count"="1");

-- per carrier and month, upserted on the primary key
CREATE TABLE IF NOT EXISTS carrier_delays (
  carrier STRING, airline STRING, month INT,
  flights BIGINT, avg_dep_delay DOUBLE, max_arr_delay DOUBLE
)
TBLPROPERTIES(
  "connector"="sql",
  "url"="sqlite:///${STREAMJOB_HOME}/flights.db",
  "primary.key"="carrier,month"
);

-- flights more than an hour late on arrival, appended as Parquet
CREATE TABLE IF NOT EXISTS late_flights (
  year INT, month INT, day INT, carrier STRING, flight INT,
  origin STRING, dest STRING, dep_delay DOUBLE, arr_delay DOUBLE
)
STORED AS PARQUET
LOCATION '${STREAMJOB_HOME}/warehouse/default/late_flights';

CREATE STREAMJOB IF NOT EXISTS carrier_delays_job AS ("
  insert into carrier_delays
  select f.carrier, a.name, f.month,
         count(*), avg(f.dep_delay), max(f.arr_delay)
  from flights f join airlines a on f.carrier = a.carrier
  group by f.carrier, a.name, f.month")
JOBPROPERTIES(
  "morphling.job.checkpoint.interval"="${CHECKPOINT_INTERVAL:-2000}",
  "morphling.job.max.records.per.batch"="${MAX_RECORDS_PER_BATCH:-100000}",
  "morphling.result.auto.flush"="false"          -- exactly-once
);

CREATE STREAMJOB IF NOT EXISTS late_flights_job AS ("
  insert into late_flights
  select year, month, day, carrier, flight, origin, dest, dep_delay, arr_delay
  from flights
  where arr_delay > 60")
JOBPROPERTIES(
  "morphling.job.checkpoint.interval"="${CHECKPOINT_INTERVAL:-2000}",
  "morphling.job.max.records.per.batch"="${MAX_RECORDS_PER_BATCH:-100000}"
);

START STREAMJOB carrier_delays_job;
START STREAMJOB late_flights_job;
