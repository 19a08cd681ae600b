-- 0013: rotated OAuth2 refresh tokens are kept per credential, not per
-- resource: every resource of a job file that uses one credential (same
-- token_url, client_id and seed, e.g. through defaults:) shares one token
-- chain (docs/job-file.md, Auth). job is the job file's name; credential
-- identifies the credential (a hash of token_url, client_id and seed);
-- seed_hash is the SHA-256 of the seed. The tokens of 0003 are carried
-- over as 'legacy' rows under their old key (the job or JOB.RESOURCE),
-- adopted by the credential whose seed they descend from at its first
-- exchange. The one secret the state file holds; never printed. pending
-- = 1 while an exchange was sent and its answer not yet stored.

CREATE TABLE auth_credentials (
    job        TEXT NOT NULL,
    credential TEXT NOT NULL,
    seed_hash  TEXT NOT NULL,
    token      TEXT NOT NULL,
    pending    INTEGER NOT NULL DEFAULT 0,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (job, credential)
) STRICT;

INSERT INTO auth_credentials (job, credential, seed_hash, token, pending, updated_at)
    SELECT job, 'legacy', seed_hash, token, pending, updated_at FROM auth_tokens;

DROP TABLE auth_tokens;
