-- expect: 2:18: unexpected
CREATE SAVEPOINT 'sp' FOR STREAMJOB j;
