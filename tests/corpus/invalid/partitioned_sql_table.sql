-- expect: 3:3: only file, Delta and Iceberg tables can be partitioned
CREATE TABLE totals (k STRING, total DOUBLE)
  PARTITIONED BY (k)
  TBLPROPERTIES ("connector"="sql", "url"="sqlite:///totals.db", "primary.key"="k");
