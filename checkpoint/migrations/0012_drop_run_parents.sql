-- 0012: a child run no longer keeps a copy of its parent rows: it reads
-- them from the parent table in key order as it walks them, and its
-- checkpoint names the last parent started and the parents in flight
-- (docs/job-file.md, "Parent → child fan-out"). The copies 0008 kept
-- (the whole parent table per child run, for the retention) go; an
-- unfinished child run begun with one starts over. runs.parents stays,
-- NULL for every new run.

DROP TABLE run_parents;
