/* Slipstream 5.1's predicate sessions: INIT/END/EXCLUDE/KEYEDBY, TIMEOUT, parts in any
   order, a named clause over an alias, a stream without event time (processing time). */
CREATE STREAM s (id STRING, a INT) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092");
CREATE TABLE t (id STRING, n BIGINT);
CREATE STREAMJOB j AS ("insert into t
  select id, count(*) from s SESSIONWINDOW(INIT[a > 1] END[a < 0 EXCLUDE] KEYEDBY(id))
  group by id");
CREATE STREAMJOB j2 AS ("insert into t
  select x.id, count(*) from s x sessionwindow w as (keyedby(id), timeout '5' minutes,
  init[x.a = 1]) group by x.id");
