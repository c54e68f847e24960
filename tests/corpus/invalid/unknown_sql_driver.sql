-- expect: 3:9: unknown SQLAlchemy dialect or driver 'foo+bar'; did you mean
CREATE TABLE totals (k STRING, n BIGINT) TBLPROPERTIES ("connector"="sql",
  "url"="foo+bar://app:s3cret@db:5432/x", "primary.key"="k");
