-- expect: 4:3: Kafka stream 's': unknown property 'tpoic'; did you mean 'topic'?
CREATE STREAM s (a INT)
TBLPROPERTIES (
  "tpoic"="events",
  "kafka.broker.list"="h:9092");
