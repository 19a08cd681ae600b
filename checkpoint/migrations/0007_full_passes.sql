-- 0007: full passes and deletions (SPEC §10, docs/deletions.md). A run
-- knows whether it is a full pass and how many rows it deleted or marked;
-- a job knows when its last completed full pass started, and whether its
-- next run must be one (its last sweep was refused).

ALTER TABLE runs ADD COLUMN full INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN deleted INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN full_pass_at TEXT;
ALTER TABLE jobs ADD COLUMN full_due INTEGER NOT NULL DEFAULT 0;
