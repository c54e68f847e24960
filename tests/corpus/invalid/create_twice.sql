-- expect: 3:14: table default.t already exists
CREATE TABLE t (a INT);
CREATE TABLE t (a INT, b INT);
