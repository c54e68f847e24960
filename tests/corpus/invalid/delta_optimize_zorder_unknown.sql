-- expect: 3:34: has no column 'kinds' (did you mean 'kind'?)
CREATE TABLE lk (id BIGINT, kind STRING) STORED AS DELTA LOCATION '/tmp/lk';
OPTIMIZE TABLE lk ZORDER BY (id, kinds);
