-- expect: 3:1: missing ';' between statements: 'CREATE' starts a new statement
CREATE TABLE t (a INT)
CREATE TABLE u (a INT);
