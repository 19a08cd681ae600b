package checkpoint

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
)

// legacyCredential marks a refresh token stored before tokens were kept
// per credential (migration 0013), under its old job or JOB.RESOURCE key.
const legacyCredential = "legacy"

// LoadRefreshToken returns the OAuth2 refresh token stored for credential
// of job (the job file's name) and whether an exchange was left
// unfinished; "" when none is stored. A token stored before migration 0013
// under the job or one of its resources and descending from the same seed
// (seedHash) is adopted on the way: the most recent one no exchange was
// left pending on. The token is a secret: never print it.
func (s *Store) LoadRefreshToken(ctx context.Context, job, credential, seedHash string) (token string, pending bool, err error) {
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		var p int
		err := tx.QueryRowContext(ctx, `SELECT token, pending FROM auth_credentials WHERE job = ? AND credential = ?`, job, credential).Scan(&token, &p)
		if err == nil {
			pending = p != 0
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		err = tx.QueryRowContext(ctx, `SELECT token, pending FROM auth_credentials
			WHERE credential = ?1 AND seed_hash = ?2 AND (job = ?3 OR substr(job, 1, length(?3) + 1) = ?3 || '.')
			ORDER BY pending, updated_at DESC LIMIT 1`, legacyCredential, seedHash, job).Scan(&token, &p)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		pending = p != 0
		if _, err := tx.ExecContext(ctx, `INSERT INTO auth_credentials (job, credential, seed_hash, token, pending, updated_at)
			VALUES (?, ?, ?, ?, ?, ?)`, job, credential, seedHash, token, p, s.stamp()); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM auth_credentials
			WHERE credential = ?1 AND seed_hash = ?2 AND (job = ?3 OR substr(job, 1, length(?3) + 1) = ?3 || '.')`,
			legacyCredential, seedHash, job)
		return err
	})
	if err != nil {
		return "", false, s.wrap("read auth token", err)
	}
	return token, pending, nil
}

// SaveRefreshToken stores the refresh token of credential of job; the
// commit (synchronous=FULL) has reached the disk when it returns.
func (s *Store) SaveRefreshToken(ctx context.Context, job, credential, seedHash, token string, pending bool) error {
	p := 0
	if pending {
		p = 1
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO auth_credentials (job, credential, seed_hash, token, pending, updated_at) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (job, credential) DO UPDATE SET seed_hash = excluded.seed_hash, token = excluded.token,
			pending = excluded.pending, updated_at = excluded.updated_at`,
		job, credential, seedHash, token, p, s.stamp())
	if err != nil {
		return s.wrap("store auth token", err)
	}
	return nil
}

// DropRefreshTokens removes the refresh tokens of job (and of its
// resources, stored before migration 0013) that belong to no credential in
// keep, except the old ones descending from a seed in seeds (not adopted
// yet). It returns how many it removed: a changed seed, token_url or
// client_id leaves no token behind.
func (s *Store) DropRefreshTokens(ctx context.Context, job string, keep, seeds []string) (int, error) {
	n := 0
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT job, credential, seed_hash FROM auth_credentials
			WHERE job = ?1 OR substr(job, 1, length(?1) + 1) = ?1 || '.'`, job)
		if err != nil {
			return err
		}
		var drop [][2]string
		for rows.Next() {
			var j, c, seed string
			if err := rows.Scan(&j, &c, &seed); err != nil {
				rows.Close()
				return err
			}
			if slices.Contains(keep, c) || c == legacyCredential && slices.Contains(seeds, seed) {
				continue
			}
			drop = append(drop, [2]string{j, c})
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, d := range drop {
			if _, err := tx.ExecContext(ctx, `DELETE FROM auth_credentials WHERE job = ? AND credential = ?`, d[0], d[1]); err != nil {
				return fmt.Errorf("drop auth token: %w", err)
			}
		}
		n = len(drop)
		return nil
	})
	if err != nil {
		return 0, s.wrap("drop auth tokens", err)
	}
	return n, nil
}
