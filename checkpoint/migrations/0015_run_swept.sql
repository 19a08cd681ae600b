-- 0015: two proving passes before a row goes (docs/deletions.md, "Two
-- passes"). runs.swept is 1 for a full pass whose sweep ran with proof of
-- absence: the next such pass removes only the rows this one missed too.
-- runs.pending_deletes is how many rows its sweep missed but kept, for the
-- next proving pass to remove if it misses them as well. A full pass that
-- completed with its keys recorded and its sweep not skipped, before this
-- step, swept: it counts as the previous proving pass.

ALTER TABLE runs ADD COLUMN swept INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN pending_deletes INTEGER NOT NULL DEFAULT 0;
UPDATE runs SET swept = 1
	WHERE status = 'completed' AND full = 1 AND sweep_skipped = ''
	AND EXISTS (SELECT 1 FROM pages p WHERE p.run_id = runs.id)
	AND NOT EXISTS (SELECT 1 FROM pages p WHERE p.run_id = runs.id AND p.keys IS NULL);
