-- 0011: a sweep the pass could not prove (docs/deletions.md, "What proves
-- absence"). runs.sweep_skipped is the first reason the full pass found
-- that voids its proof ('' while it has none): it is kept when the run is
-- continued, and a run that ends with one deletes nothing. The metrics
-- count the passes that ended with their sweep skipped.

ALTER TABLE runs ADD COLUMN sweep_skipped TEXT NOT NULL DEFAULT '';
ALTER TABLE metrics_totals ADD COLUMN sweeps_skipped INTEGER NOT NULL DEFAULT 0;
