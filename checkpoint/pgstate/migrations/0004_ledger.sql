-- 0004: the side-effect ledger (docs/ledger.md), as the SQLite state's
-- migration 0020. Leases are judged by the database's clock.

CREATE TABLE {S}.ledger (
    ns          text        NOT NULL,
    key         text        NOT NULL,
    status      text        NOT NULL, -- pending, completed, failed, retry, held
    fingerprint text        NOT NULL DEFAULT '',
    token       text        NOT NULL DEFAULT '',
    owner       text        NOT NULL DEFAULT '',
    attempt     bigint      NOT NULL,
    ttl_ms      bigint      NOT NULL,
    expires_at  timestamptz NOT NULL,
    not_before  timestamptz,
    result      text        NOT NULL DEFAULT '',
    error       text        NOT NULL DEFAULT '',
    unknown     bigint      NOT NULL DEFAULT 0,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    PRIMARY KEY (ns, key)
);

CREATE INDEX ledger_status_updated ON {S}.ledger (status, updated_at);
