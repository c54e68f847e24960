-- expect: 3:18: Iceberg table 'events': unknown property 'iceberg.namespaces'; did you mean 'iceberg.namespace'?
CREATE TABLE events (id BIGINT, kind STRING) STORED AS ICEBERG
  TBLPROPERTIES ("iceberg.namespaces"="lake");
