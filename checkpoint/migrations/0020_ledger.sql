-- 0020: the side-effect ledger (docs/ledger.md): one row per namespace and
-- key, claimed before the side effect, completed or failed after it.
-- Times are fixed-width RFC 3339 UTC text like every time of this file;
-- ttl_ms is the lease a heartbeat renews; unknown counts the leases that
-- ended without complete or fail (a side effect that may have happened).

CREATE TABLE ledger (
    ns          TEXT    NOT NULL,
    key         TEXT    NOT NULL,
    status      TEXT    NOT NULL, -- pending, completed, failed, retry, held
    fingerprint TEXT    NOT NULL DEFAULT '',
    token       TEXT    NOT NULL DEFAULT '',
    owner       TEXT    NOT NULL DEFAULT '',
    attempt     INTEGER NOT NULL,
    ttl_ms      INTEGER NOT NULL,
    expires_at  TEXT    NOT NULL,
    not_before  TEXT    NOT NULL DEFAULT '',
    result      TEXT    NOT NULL DEFAULT '',
    error       TEXT    NOT NULL DEFAULT '',
    unknown     INTEGER NOT NULL DEFAULT 0,
    created_at  TEXT    NOT NULL,
    updated_at  TEXT    NOT NULL,
    PRIMARY KEY (ns, key)
) STRICT;

CREATE INDEX ledger_status_updated ON ledger (status, updated_at);
