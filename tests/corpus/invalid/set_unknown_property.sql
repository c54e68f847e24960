-- expect: 2:5: unknown job property 'morphling.result.autoflush'; did you mean 'morphling.result.auto.flush'?
SET morphling.result.autoflush=true;
