-- expect: 3:17: streamjob default.nope does not exist
SHOW STREAMS;
START STREAMJOB nope;
