-- Savepoints (docs/checkpoints.md): checkpoints the user keeps, outside retention.
CREATE STREAM clicks (user_id STRING, page STRING)
  TBLPROPERTIES ("topic"="clicks", "kafka.broker.list"="localhost:9092", "format"="json");
CREATE TABLE pages (user_id STRING, page STRING)
  TBLPROPERTIES ("connector"="sql", "url"="sqlite:///pages.db");
CREATE STREAMJOB copy_clicks AS ("insert into pages select user_id, page from clicks")
  JOBPROPERTIES ("morphling.checkpoint.retained"="2");
START STREAMJOB copy_clicks;
CREATE SAVEPOINT before_upgrade FOR STREAMJOB copy_clicks;
SHOW SAVEPOINTS;
STOP STREAMJOB copy_clicks WITH SAVEPOINT at_stop;
show savepoints for copy_clicks;
SHOW SAVEPOINTS FOR STREAMJOB default.copy_clicks;
START STREAMJOB copy_clicks FROM SAVEPOINT before_upgrade;
STOP STREAMJOB copy_clicks;
START STREAMJOB copy_clicks FROM SAVEPOINT at_stop WITH STATE RESET;
STOP STREAMJOB copy_clicks;
DROP SAVEPOINT at_stop FOR STREAMJOB copy_clicks;
DROP STREAMJOB copy_clicks;
