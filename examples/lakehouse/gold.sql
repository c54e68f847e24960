-- The lakehouse pipeline, stage 3 of 3: the silver Delta table read as a stream, per
-- carrier, upserted into the gold Iceberg table lakehouse.carrier_punctuality (its
-- catalog: streamjob's own catalog database).
CREATE STREAM IF NOT EXISTS silver_flights (
  carrier STRING, route STRING, flight_date DATE, dep_delay DOUBLE, arr_delay DOUBLE,
  late BOOLEAN
)
STORED AS DELTA LOCATION '${STREAMJOB_HOME}/warehouse/lakehouse/flights_silver';

CREATE TABLE IF NOT EXISTS carrier_punctuality (
  carrier STRING, flights BIGINT, late_flights BIGINT, avg_arr_delay DOUBLE
)
STORED AS ICEBERG LOCATION '${STREAMJOB_HOME}/warehouse'
TBLPROPERTIES("iceberg.namespace"="lakehouse", "primary.key"="carrier");

CREATE STREAMJOB IF NOT EXISTS gold_job AS ("
  insert into carrier_punctuality
  select carrier, count(*), sum(case when late then 1 else 0 end), avg(arr_delay)
  from silver_flights
  group by carrier")
JOBPROPERTIES("morphling.result.auto.flush"="false");

START STREAMJOB gold_job;
