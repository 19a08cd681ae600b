-- 0024: what each run did to each child table (docs/job-file.md, "Child
-- tables"): rows inserted and rows deleted or marked, by the child table's
-- name, added in the page's checkpoint transaction like the run's own
-- counts. Pruned and forgotten with the run.

CREATE TABLE run_children (
    run_id   INTEGER NOT NULL,
    tbl      TEXT    NOT NULL,
    inserted INTEGER NOT NULL,
    deleted  INTEGER NOT NULL,
    PRIMARY KEY (run_id, tbl)
) STRICT;
