-- Delta tables on object stores and maintenance on a schedule (issue 32;
-- docs/connectors.md "Delta table"): storage options by secret reference.
CREATE TABLE bronze (id BIGINT, kind STRING) STORED AS DELTA
  LOCATION 's3://lake/bronze'
  TBLPROPERTIES ("delta.storage.aws.region"="eu-west-1",
                 "delta.storage.aws.access.key.id"="${env:STREAMJOB_SECRET_S3_KEY_ID}",
                 "delta.storage.aws.secret.access.key"="${env:STREAMJOB_SECRET_S3_KEY}",
                 "optimize.interval"="1 day", "vacuum.interval"="7 days",
                 "vacuum.retain.hours"="240");
CREATE TABLE silver (id BIGINT) STORED AS DELTA
  LOCATION 'abfss://lake@account.dfs.core.windows.net/silver'
  TBLPROPERTIES ("delta.storage.azure.storage.account.name"="account",
                 "delta.storage.azure.storage.account.key"="${file:azure.key}");
CREATE TABLE gold (id BIGINT) STORED AS DELTA LOCATION '${STREAMJOB_HOME}/warehouse/default/gold'
  TBLPROPERTIES ("optimize.interval"="6 hours");
