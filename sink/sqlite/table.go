package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/idemsync/idemsync/sink/sqlkit"
	idsync "github.com/idemsync/idemsync/sync"
)

var _ idsync.TableStater = (*Sink)(nil)

// TableState reports whether t exists in the SQLite file and whether it
// holds no row (see idsync.TableStater). It reads only. Errors are
// *idsync.Error as for Upsert.
func (s *Sink) TableState(ctx context.Context, t *idsync.Table) (exists, empty bool, err error) {
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
	err = s.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM `+sqlkit.QuoteTable(&idsync.Table{Name: t.Name})+`)`).Scan(&has)
	if err != nil {
		return true, false, s.wrap(op, err)
	}
	return true, has == 0, nil
}
