-- 0003: run ownership, per-job run numbers, lock holders.
--
-- owner is the token of the process that started or reopened the run; a
-- page commit or finish from any other process is refused, so a second
-- writer can never overwrite a run it does not own. number counts a job's
-- runs from 1. locks says who holds a job's run lock (the lock itself is
-- an OS lock on the state file).

ALTER TABLE runs ADD COLUMN owner TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN number INTEGER NOT NULL DEFAULT 0;
UPDATE runs SET number = (SELECT count(*) FROM runs r WHERE r.job = runs.job AND r.id <= runs.id);

CREATE TABLE locks (
    job    TEXT PRIMARY KEY,
    holder TEXT NOT NULL,            -- "pid N on HOST since T"
    token  TEXT NOT NULL
) STRICT;
