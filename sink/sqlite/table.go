package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

var _ contract.TableStater = (*Sink)(nil)

// TableState reports whether t exists in the SQLite file and whether it
// holds no row (see contract.TableStater). It reads only. Errors are
// *contract.Error as for Upsert.
func (s *Sink) TableState(ctx context.Context, t *contract.Table) (exists, empty bool, err error) {
	if err := sqlkit.CheckTableName(t, 0); err != nil {
		return false, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	op := "read table state " + t.String()
	var name string
	err = s.db.QueryRowContext(ctx,
		`SELECT name FROM sqlite_schema WHERE name = ? COLLATE NOCASE AND type = 'table'`, t.Name).Scan(&name)
	if errors.Is(err, sql.ErrNoRows) {
		return false, true, nil
	}
	if err != nil {
		return false, false, s.wrap(op, err)
	}
	var has int
	err = s.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM `+sqlkit.QuoteTable(&contract.Table{Name: t.Name})+`)`).Scan(&has)
	if err != nil {
		return true, false, s.wrap(op, err)
	}
	return true, has == 0, nil
}
