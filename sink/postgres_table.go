package sink

import (
	"context"

	idsync "github.com/idemsync/idemsync/sync"
)

var _ idsync.TableStater = (*Postgres)(nil)

// TableState reports whether t exists (a table or partitioned table the
// connection's user can see, schema-qualified or on the search_path) and
// whether it holds no row (see idsync.TableStater). It reads only. Errors
// are *idsync.Error as for Upsert.
func (p *Postgres) TableState(ctx context.Context, t *idsync.Table) (exists, empty bool, err error) {
	if err := checkTableName(t, pgMaxIdent); err != nil {
		return false, false, err
	}
	op := "read table state " + t.String()
	p.mu.Lock()
	defer p.mu.Unlock()
	conn, err := p.connect(ctx)
	if err != nil {
		return false, false, err
	}
	var found bool
	err = conn.QueryRow(ctx,
		`SELECT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = to_regclass($1) AND c.relkind IN ('r', 'p'))`,
		quoteTable(t)).Scan(&found)
	if err != nil {
		return false, false, p.dbError(op, err)
	}
	if !found {
		return false, true, nil
	}
	var has bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+quoteTable(t)+`)`).Scan(&has); err != nil {
		return true, false, p.dbError(op, err)
	}
	return true, !has, nil
}
