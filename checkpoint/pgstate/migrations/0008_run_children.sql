-- 0008: what each run did to each child table (docs/job-file.md, "Child
-- tables"), as the SQLite state's migration 0024: rows inserted and rows
-- deleted or marked, by the child table's name, added in the page's
-- checkpoint batch like the run's own counts. Pruned and forgotten with
-- the run.

CREATE TABLE {S}.run_children (
    run_id   bigint NOT NULL,
    tbl      text   NOT NULL,
    inserted bigint NOT NULL,
    deleted  bigint NOT NULL,
    PRIMARY KEY (run_id, tbl)
);
