-- 0001: the state store on PostgreSQL, as the SQLite state file stands at
-- its migration 0014 (checkpoint/migrations), in one step. {S} is the
-- schema (docs/operations.md, "State in PostgreSQL"). Times are timestamptz;
-- the bytes the engine treats as opaque and that may hold any byte (a
-- page's keys, a dead letter's raw record) are bytea.

CREATE TABLE {S}.jobs (
    name         text PRIMARY KEY,
    hwm          text NOT NULL DEFAULT '',
    columns_json text,                       -- NULL = none saved
    identity     text,                       -- NULL = not known
    full_pass_at timestamptz,
    full_due     boolean NOT NULL DEFAULT false,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL
);

CREATE TABLE {S}.runs (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job           text NOT NULL REFERENCES {S}.jobs (name),
    number        bigint NOT NULL,
    kind          text NOT NULL,
    status        text NOT NULL,
    started_at    timestamptz NOT NULL,
    finished_at   timestamptz,               -- NULL while running
    pages         bigint NOT NULL DEFAULT 0,
    records       bigint NOT NULL DEFAULT 0,
    inserted      bigint NOT NULL DEFAULT 0,
    updated       bigint NOT NULL DEFAULT 0,
    unchanged     bigint NOT NULL DEFAULT 0,
    skipped       bigint NOT NULL DEFAULT 0,
    deleted       bigint NOT NULL DEFAULT 0,
    checkpoint    text NOT NULL DEFAULT '',
    last_pos      text NOT NULL DEFAULT '',
    window_mark   text NOT NULL DEFAULT '',
    max_mark      text NOT NULL DEFAULT '',
    from_pos      text NOT NULL DEFAULT '',
    to_pos        text NOT NULL DEFAULT '',
    error         text NOT NULL DEFAULT '',
    owner         text NOT NULL DEFAULT '',  -- the Store that started or reopened it
    identity      text,
    full_pass     boolean NOT NULL DEFAULT false,
    sweep_skipped text NOT NULL DEFAULT '',
    live_before   bigint,
    refused_since timestamptz
);

CREATE INDEX runs_job_id ON {S}.runs (job, id);

CREATE TABLE {S}.pages (
    run_id       bigint NOT NULL REFERENCES {S}.runs (id),
    seq          bigint NOT NULL,
    position     text NOT NULL,
    next         text NOT NULL,
    records      bigint NOT NULL,
    hash         text NOT NULL,
    committed_at timestamptz NOT NULL,
    elapsed_ms   bigint NOT NULL,
    keys         bytea,                      -- NULL: keys not recorded
    PRIMARY KEY (run_id, seq)
);

CREATE TABLE {S}.dead_letters (
    id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job      text NOT NULL REFERENCES {S}.jobs (name),
    run_id   bigint NOT NULL REFERENCES {S}.runs (id),
    position text NOT NULL,
    idx      bigint NOT NULL,
    reason   text NOT NULL,
    raw      bytea NOT NULL,
    at       timestamptz NOT NULL
);

CREATE INDEX dead_letters_job_id ON {S}.dead_letters (job, id);

-- The run lock as a lease (docs/operations.md, "Leases"): one row per job,
-- kept after release so that token only grows. expires_at is computed from
-- the database's clock; a released lease has expired.
CREATE TABLE {S}.leases (
    job         text PRIMARY KEY,
    token       bigint NOT NULL,
    holder      text NOT NULL,               -- "pid N on HOST since T"
    acquired_at timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL
);

CREATE TABLE {S}.metrics_totals (
    job              text NOT NULL,
    resource         text NOT NULL,
    pages            bigint NOT NULL DEFAULT 0,
    inserted         bigint NOT NULL DEFAULT 0,
    updated          bigint NOT NULL DEFAULT 0,
    unchanged        bigint NOT NULL DEFAULT 0,
    skipped          bigint NOT NULL DEFAULT 0,
    deleted          bigint NOT NULL DEFAULT 0,
    sweeps_skipped   bigint NOT NULL DEFAULT 0,
    last_run_at      timestamptz,
    last_success_at  timestamptz,
    last_duration_ms bigint NOT NULL DEFAULT 0,
    last_exit_code   bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (job, resource)
);

CREATE TABLE {S}.job_cycles (
    name       text PRIMARY KEY,
    started_at timestamptz NOT NULL
);

CREATE TABLE {S}.auth_credentials (
    job        text NOT NULL,
    credential text NOT NULL,
    seed_hash  text NOT NULL,
    token      text NOT NULL,
    pending    boolean NOT NULL DEFAULT false,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (job, credential)
);
