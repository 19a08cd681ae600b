-- 0001: the first schema of the idemsync state file.
--
-- Timestamps are RFC 3339 UTC text with nanoseconds in a fixed width, so
-- they sort as text. Positions and marks are the engine's encoded strings;
-- "" means none.

CREATE TABLE jobs (
    name         TEXT PRIMARY KEY,
    hwm          TEXT NOT NULL DEFAULT '',
    columns_json TEXT,                      -- JSON [{name,path,type}]; NULL = none saved
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL
) STRICT;

CREATE TABLE runs (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    job         TEXT NOT NULL REFERENCES jobs (name),
    kind        TEXT NOT NULL,
    status      TEXT NOT NULL,
    started_at  TEXT NOT NULL,
    finished_at TEXT,                       -- NULL while running
    pages       INTEGER NOT NULL DEFAULT 0,
    records     INTEGER NOT NULL DEFAULT 0,
    inserted    INTEGER NOT NULL DEFAULT 0,
    updated     INTEGER NOT NULL DEFAULT 0,
    unchanged   INTEGER NOT NULL DEFAULT 0,
    skipped     INTEGER NOT NULL DEFAULT 0,
    checkpoint  TEXT NOT NULL DEFAULT '',   -- position of the next page to fetch
    last_pos    TEXT NOT NULL DEFAULT '',   -- position of the last committed page
    window_mark TEXT NOT NULL DEFAULT '',   -- incremental mark fixed at run start
    max_mark    TEXT NOT NULL DEFAULT '',   -- highest incremental value committed
    from_pos    TEXT NOT NULL DEFAULT '',   -- replay bounds
    to_pos      TEXT NOT NULL DEFAULT '',
    error       TEXT NOT NULL DEFAULT ''
) STRICT;

CREATE INDEX runs_job_id ON runs (job, id);

CREATE TABLE pages (
    run_id       INTEGER NOT NULL REFERENCES runs (id),
    seq          INTEGER NOT NULL,          -- 1, 2, … within the run
    position     TEXT NOT NULL,
    next         TEXT NOT NULL,
    records      INTEGER NOT NULL,
    hash         TEXT NOT NULL,
    committed_at TEXT NOT NULL,
    elapsed_ms   INTEGER NOT NULL,
    PRIMARY KEY (run_id, seq)
) STRICT;

CREATE TABLE dead_letters (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    job      TEXT NOT NULL REFERENCES jobs (name),
    run_id   INTEGER NOT NULL REFERENCES runs (id),
    position TEXT NOT NULL,
    idx      INTEGER NOT NULL,              -- index of the record in its page
    reason   TEXT NOT NULL,
    raw      TEXT NOT NULL,
    at       TEXT NOT NULL
) STRICT;

CREATE INDEX dead_letters_job_id ON dead_letters (job, id);
