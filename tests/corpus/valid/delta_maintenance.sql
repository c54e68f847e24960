-- Delta table maintenance (issue 32; docs/connectors.md "Maintenance"): Delta Lake's spelling.
CREATE TABLE lake (id BIGINT, kind STRING, day STRING) PARTITIONED BY (day)
  STORED AS DELTA LOCATION '${STREAMJOB_HOME}/warehouse/default/lake';
OPTIMIZE TABLE lake;
optimize default.lake zorder by (kind, id);
VACUUM TABLE lake;
vacuum lake retain 720 hours dry run;
VACUUM lake DRY RUN;
