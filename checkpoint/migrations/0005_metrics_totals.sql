-- 0005: what --metrics-file reports, per job and resource: counters
-- cumulative over the job's life (pages and records by outcome, summed
-- from every run that ended) and the last run's time, duration, exit code
-- and the last success's time. prune never touches this table.

CREATE TABLE metrics_totals (
    job              TEXT NOT NULL,
    resource         TEXT NOT NULL,
    pages            INTEGER NOT NULL DEFAULT 0,
    inserted         INTEGER NOT NULL DEFAULT 0,
    updated          INTEGER NOT NULL DEFAULT 0,
    unchanged        INTEGER NOT NULL DEFAULT 0,
    skipped          INTEGER NOT NULL DEFAULT 0,
    deleted          INTEGER NOT NULL DEFAULT 0,
    last_run_at      TEXT NOT NULL,
    last_success_at  TEXT,
    last_duration_ms INTEGER NOT NULL DEFAULT 0,
    last_exit_code   INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (job, resource)
) STRICT;
