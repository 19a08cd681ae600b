-- 0019: run keys (docs/operations.md, "Run keys"). A run started with
-- --run-key K records here what it ended with; a second start with the
-- same key reports that result and fetches nothing. result is the command
-- line's JSON, opaque to the store.

CREATE TABLE run_keys (
    job    TEXT NOT NULL,
    key    TEXT NOT NULL,
    result TEXT NOT NULL,
    at     TEXT NOT NULL, -- when the result was recorded (prune drops old keys)
    PRIMARY KEY (job, key)
) STRICT;

-- Where the state went: `idemsync state migrate` leaves one row here once
-- it copied the file's state elsewhere, and every run lock on the file is
-- then refused (exit 2) naming that place (docs/operations.md, "Moving a
-- job between hosts").
CREATE TABLE moved (
    to_state TEXT NOT NULL, -- the new state, its password redacted
    at       TEXT NOT NULL
) STRICT;
