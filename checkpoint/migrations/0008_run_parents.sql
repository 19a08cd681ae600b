-- 0008: the parent snapshot of a child resource's run (SPEC §8): the
-- parent rows the run walks, fixed when it starts, in key order (seq from
-- 0), each a JSON object of the parent's columns. runs.parents is how many
-- it holds; NULL for a run that is no child's.

ALTER TABLE runs ADD COLUMN parents INTEGER;

CREATE TABLE run_parents (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    seq    INTEGER NOT NULL,
    row    TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
