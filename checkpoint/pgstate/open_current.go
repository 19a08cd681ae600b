package pgstate

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
)

// openCurrent reads, in one round trip, the schema's version and the
// state's identity, and reports whether the schema is at this build's
// version: every open but the first after an upgrade, so that a one-shot
// process (`idemsync key claim`) pays one statement before its work, not
// three (docs/ledger.md, "Speed"). A schema or version table that does
// not exist yet is not current; migrate and readIdentity then do the
// rest.
func (s *Store) openCurrent(ctx context.Context) (bool, error) {
	var v int
	var id *string
	err := s.pool.QueryRow(ctx, s.q(`SELECT
		(SELECT coalesce(max(version), 0) FROM {S}.idemsync_schema),
		(SELECT id FROM {S}.identity LIMIT 1)`)).Scan(&v, &id)
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && (pgErr.Code == "42P01" || pgErr.Code == "3F000"): // undefined table, schema
		return false, nil
	case err != nil:
		return false, err
	case v != latestVersion() || id == nil:
		return false, nil
	}
	s.id = *id
	return true, nil
}
