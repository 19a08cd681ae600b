-- 0015: the target's progress marker of each job's last page committed
-- with rows, as the SQLite state's migration 0031 (docs/guarantees.md,
-- "Job identity"). 0 records none: the target is adopted as it is.
ALTER TABLE {S}.jobs ADD COLUMN target_marker bigint NOT NULL DEFAULT 0;
