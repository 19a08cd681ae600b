-- 0004: the identity of a job's walk (SPEC §7): a JSON object of the job
-- file's keys that decide which records its pages hold and where its
-- positions point ({"pagination.size": "50", …}; secret values only as a
-- hash). runs.identity is the walk a run was started with, so it is never
-- continued over another; jobs.identity is the walk of the job's latest
-- run (not replay), whose saved mark and positions the job keeps. NULL:
-- not known (written before 0004); the current walk is adopted silently.

ALTER TABLE jobs ADD COLUMN identity TEXT;
ALTER TABLE runs ADD COLUMN identity TEXT;
