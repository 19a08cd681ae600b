-- 0031: the target's progress marker of each job's last page committed
-- with rows (docs/guarantees.md, "Job identity"): a target whose marker
-- is behind it was restored or rolled back, and the job starts from the
-- beginning. 0 records none (a job run before markers): its target is
-- adopted as it is.
ALTER TABLE jobs ADD COLUMN target_marker INTEGER NOT NULL DEFAULT 0;
