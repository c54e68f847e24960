-- Query upgrades (issue 30, docs/upgrades.md): ALTER STREAMJOB ... AS and CREATE OR REPLACE
CREATE STREAM visits (id INT, name STRING) TBLPROPERTIES ("topic"="visits", "kafka.broker.list"="h:9092", "format"="json");
CREATE TABLE copies (id INT, name STRING) TBLPROPERTIES ("connector"="sql", "url"="sqlite:////tmp/corpus-upgrades.db");
CREATE TABLE counts (name STRING, n BIGINT, label STRING) TBLPROPERTIES ("connector"="sql", "url"="sqlite:////tmp/corpus-upgrades.db", "primary.key"="name");
CREATE STREAMJOB copying AS ("insert into copies select id, name from visits");
ALTER STREAMJOB copying AS ("insert into copies select id, upper(name) from visits where id > 0");
EXPLAIN ALTER STREAMJOB copying AS ("insert into copies select id, name from visits where id > 1");
CREATE STREAMJOB counting AS ("insert into counts (name, n) select name, count(*) from visits group by name");
ALTER STREAMJOB counting AS ("insert into counts select name, count(*), upper(name) from visits group by name");
CREATE OR REPLACE STREAMJOB counting AS ("insert into counts (name, n) select cast(id as string), count(*) from visits group by id")
  JOBPROPERTIES ("morphling.checkpoint.retained"="3") FROM EARLIEST;
-- the grouping keys change, the offsets are kept and the state is rebuilt
ALTER STREAMJOB counting AS ("insert into counts (name, n) select upper(name), count(*) from visits group by upper(name)")
  WITH STATE RESET;
CREATE OR REPLACE STREAMJOB fresh AS ("insert into copies select id, name from visits");
EXPLAIN CREATE OR REPLACE STREAMJOB counting AS ("insert into counts (name, n) select name, count(*) from visits group by name");
EXPLAIN ALTER STREAMJOB counting AS ("insert into counts (name, n) select cast(id as string), count(*) from visits group by id");
