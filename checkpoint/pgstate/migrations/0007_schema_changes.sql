-- 0007: the schema changes of each job's table (docs/job-file.md, "The
-- schema contract"), as the SQLite state's migration 0023: a column a
-- page added (from_type '') or widened, and why, recorded in the page's
-- checkpoint transaction. Kept like dead letters: prune leaves them,
-- forget removes them.

CREATE TABLE {S}.schema_changes (
    id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job       text        NOT NULL,
    run_id    bigint      NOT NULL,
    tbl       text        NOT NULL,
    col       text        NOT NULL,
    from_type text        NOT NULL,
    to_type   text        NOT NULL,
    reason    text        NOT NULL,
    at        timestamptz NOT NULL
);

CREATE INDEX schema_changes_job_id ON {S}.schema_changes (job, id);
