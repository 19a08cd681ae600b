-- 0014: when a chain of full passes whose sweeps max_delete_ratio refused
-- began (docs/deletions.md, "A glitch that outlasts a run"): the pass after
-- a refusal keeps the base of the rows before the first refused pass, and
-- only rows written before that moment count against the ratio. NULL for
-- every other run.

ALTER TABLE runs ADD COLUMN refused_since TEXT;
