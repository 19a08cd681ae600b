-- 0029: what target.schema discarded in each run (docs/job-file.md, "The
-- schema contract"): records written without a new field, values stored
-- as NULL, records dead-lettered whole, added in the page's checkpoint
-- transaction like the run's own counts, so that a continued run reports
-- its whole pass's. A run that discarded nothing has no row. Pruned and
-- forgotten with the run.

CREATE TABLE run_schema_discards (
    run_id        INTEGER PRIMARY KEY,
    new_fields    INTEGER NOT NULL,
    nulled_values INTEGER NOT NULL,
    dropped_rows  INTEGER NOT NULL
) STRICT;
