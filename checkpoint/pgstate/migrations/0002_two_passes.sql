-- 0002: two proving passes before a row goes (docs/deletions.md, "Two
-- passes"), as the SQLite state's migration 0015. runs.swept is true for
-- a full pass whose sweep ran with proof of absence; pending_deletes is
-- how many rows its sweep missed but kept for the next proving pass. A
-- full pass completed before this step with all its keys and its sweep not
-- skipped swept: it counts as the previous proving pass.

ALTER TABLE {S}.runs ADD COLUMN swept boolean NOT NULL DEFAULT false;
ALTER TABLE {S}.runs ADD COLUMN pending_deletes bigint NOT NULL DEFAULT 0;
UPDATE {S}.runs r SET swept = true
	WHERE r.status = 'completed' AND r.full_pass AND r.sweep_skipped = ''
	AND EXISTS (SELECT 1 FROM {S}.pages p WHERE p.run_id = r.id)
	AND NOT EXISTS (SELECT 1 FROM {S}.pages p WHERE p.run_id = r.id AND p.keys IS NULL);
