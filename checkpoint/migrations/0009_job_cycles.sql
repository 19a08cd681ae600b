-- 0009: the open cycle of a job file with several resources (SPEC §8): an
-- invocation cut short by --max-pages, --time-limit or a signal leaves the
-- cycle open, and the next one syncs only the resources that have not
-- begun a completed run since it opened. name is the job file's name and
-- the resources an invocation selected; started_at is when the cycle
-- opened. A completed or failed invocation closes it (deletes the row).

CREATE TABLE job_cycles (
    name       TEXT PRIMARY KEY,
    started_at TEXT NOT NULL
) STRICT;
