-- 0003: run keys (docs/operations.md, "Run keys"), as the SQLite state's
-- migration 0019. A run started with --run-key K records here what it
-- ended with; a second start with the same key reports that result and
-- fetches nothing. result is the command line's JSON, opaque to the store.

CREATE TABLE {S}.run_keys (
    job    text NOT NULL,
    key    text NOT NULL,
    result text NOT NULL,
    at     timestamptz NOT NULL,
    PRIMARY KEY (job, key)
);

-- The state's identity: a random id that names this state in the fencing
-- rows it leaves in target databases (docs/guarantees.md, "Fenced
-- targets"), whatever URL reaches it.
CREATE TABLE {S}.identity (id text NOT NULL);
INSERT INTO {S}.identity (id) VALUES (md5(random()::text || clock_timestamp()::text));
