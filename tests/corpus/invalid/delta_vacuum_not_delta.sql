-- expect: 3:14: VACUUM maintains Delta and Iceberg tables (STORED AS DELTA or ICEBERG) only
CREATE TABLE pq (id BIGINT) STORED AS PARQUET LOCATION '/tmp/pq';
VACUUM TABLE pq RETAIN 1 HOURS;
