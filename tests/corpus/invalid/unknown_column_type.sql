-- expect: 3:3: unknown column type 'strng'; did you mean 'string'?
CREATE TABLE t (
  name strng,
  n INT);
