-- 0010: the live rows the target table held when a full pass that sweeps
-- started (docs/deletions.md: max_delete_ratio is measured over them, not
-- over the table after the pass's own inserts). NULL for other runs and
-- for passes begun before this step.

ALTER TABLE runs ADD COLUMN live_before INTEGER;
