-- 0003: the rotated OAuth2 refresh token of a job (source.auth type
-- oauth2_refresh_token). The one secret the state file holds; never
-- printed. seed_hash is the SHA-256 of the spec's seed token, so that a
-- changed seed replaces the stored token. pending = 1 while an exchange
-- was sent and its answer not yet stored.

CREATE TABLE auth_tokens (
    job        TEXT PRIMARY KEY,
    seed_hash  TEXT NOT NULL,
    token      TEXT NOT NULL,
    pending    INTEGER NOT NULL DEFAULT 0,
    updated_at TEXT NOT NULL
) STRICT;
