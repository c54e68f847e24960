-- expect: 2:38: 'last tuesday' is not a time: write 'yyyy-MM-dd HH:mm:ss' (UTC)
START STREAMJOB j FROM CHECKPOINT AT 'last tuesday';
