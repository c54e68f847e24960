-- expect: 3:24: unterminated string starting here
CREATE TABLE t (a INT);
CREATE STREAMJOB j AS ("insert into t select a from s);
