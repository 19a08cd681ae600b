package checkpoint

import (
	"context"
	"database/sql"
	"errors"
)

// LoadAuthToken returns job's stored OAuth2 refresh token, the hash of the
// seed it descends from and whether an exchange was left unfinished; all
// empty when none is stored. The token is a secret: never print it.
func (s *Store) LoadAuthToken(ctx context.Context, job string) (seedHash, token string, pending bool, err error) {
	var p int
	err = s.db.QueryRowContext(ctx, `SELECT seed_hash, token, pending FROM auth_tokens WHERE job = ?`, job).Scan(&seedHash, &token, &p)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, s.wrap("read auth token", err)
	}
	return seedHash, token, p != 0, nil
}

// SaveAuthToken stores job's refresh token; the commit (synchronous=FULL)
// has reached the disk when it returns.
func (s *Store) SaveAuthToken(ctx context.Context, job, seedHash, token string, pending bool) error {
	p := 0
	if pending {
		p = 1
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO auth_tokens (job, seed_hash, token, pending, updated_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (job) DO UPDATE SET seed_hash = excluded.seed_hash, token = excluded.token, pending = excluded.pending, updated_at = excluded.updated_at`,
		job, seedHash, token, p, s.stamp())
	if err != nil {
		return s.wrap("store auth token", err)
	}
	return nil
}
