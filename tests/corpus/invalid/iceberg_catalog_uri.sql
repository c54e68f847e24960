-- expect: 3:40: is neither a SQLAlchemy URL
CREATE TABLE events (id BIGINT, kind STRING) STORED AS ICEBERG
  TBLPROPERTIES ("iceberg.catalog.uri"="nowhere");
