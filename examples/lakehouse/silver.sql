-- The lakehouse pipeline, stage 2 of 3: the bronze Delta table read as a stream, its
-- flights that arrived, with their route, into the silver Delta table.
CREATE STREAM IF NOT EXISTS bronze_flights (
  year INT, month INT, day INT, carrier STRING, flight INT, origin STRING, dest STRING,
  dep_delay DOUBLE, arr_delay DOUBLE, distance DOUBLE
)
STORED AS DELTA LOCATION '${STREAMJOB_HOME}/warehouse/lakehouse/flights_bronze';

CREATE TABLE IF NOT EXISTS flights_silver (
  carrier STRING, route STRING, flight_date DATE, dep_delay DOUBLE, arr_delay DOUBLE,
  late BOOLEAN
)
STORED AS DELTA LOCATION '${STREAMJOB_HOME}/warehouse/lakehouse/flights_silver';

CREATE STREAMJOB IF NOT EXISTS silver_job AS ("
  insert into flights_silver
  select carrier, concat(origin, '-', dest),
         make_date(year, month, day), dep_delay, arr_delay, arr_delay > 60
  from bronze_flights
  where arr_delay is not null")
JOBPROPERTIES("morphling.result.auto.flush"="false");

START STREAMJOB silver_job;
