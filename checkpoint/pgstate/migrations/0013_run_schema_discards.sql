-- 0013: what target.schema discarded in each run (docs/job-file.md, "The
-- schema contract"), as the SQLite state's migration 0029: records
-- written without a new field, values stored as NULL, records
-- dead-lettered whole, added in the page's checkpoint batch like the
-- run's own counts, so that a continued run reports its whole pass's. A
-- run that discarded nothing has no row. Pruned and forgotten with the
-- run.

CREATE TABLE {S}.run_schema_discards (
    run_id        bigint PRIMARY KEY,
    new_fields    bigint NOT NULL,
    nulled_values bigint NOT NULL,
    dropped_rows  bigint NOT NULL
);
