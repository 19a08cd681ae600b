-- 0023: the schema changes of each job's table (docs/job-file.md, "The
-- schema contract"): a column a page added (from_type '') or widened, and
-- why, recorded in the page's checkpoint transaction. Kept like dead
-- letters: prune leaves them, forget removes them.

CREATE TABLE schema_changes (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    job       TEXT    NOT NULL,
    run_id    INTEGER NOT NULL,
    tbl       TEXT    NOT NULL,
    col       TEXT    NOT NULL,
    from_type TEXT    NOT NULL,
    to_type   TEXT    NOT NULL,
    reason    TEXT    NOT NULL,
    at        TEXT    NOT NULL
) STRICT;

CREATE INDEX schema_changes_job_id ON schema_changes (job, id);
