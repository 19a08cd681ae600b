package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

var _ contract.TableStater = (*Sink)(nil)

// TableState reports whether t exists (a table or partitioned table the
// connection's user can see, schema-qualified or on the search_path) and
// whether it holds no row (see contract.TableStater). It reads only. Errors
// are *contract.Error as for Upsert.
func (p *Sink) TableState(ctx context.Context, t *contract.Table) (exists, empty bool, err error) {
	if err := sqlkit.CheckTableName(t, pgMaxIdent); err != nil {
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
		sqlkit.QuoteTable(t)).Scan(&found)
	if err != nil {
		return false, false, p.dbError(op, err)
	}
	if !found {
		return false, true, nil
	}
	// Reading a row waits for a lock another session holds on the table
	// (LOCK TABLE, ALTER TABLE, a TRUNCATE not yet committed). Past
	// tableStateLockWait the table is taken as not empty: the run goes on,
	// and its first write waits under target.timeout.lock, where a signal
	// or the time limit can end it cleanly.
	var has bool
	err = p.inTx(ctx, op, commitTx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d", tableStateLockWait.Milliseconds())); err != nil {
			return p.dbError(op, err)
		}
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+sqlkit.QuoteTable(t)+`)`).Scan(&has); err != nil {
			var pe *pgconn.PgError
			if errors.As(err, &pe) && pe.Code == "55P03" {
				return errTableLocked // the transaction failed: rolled back, not committed
			}
			return p.dbError(op, err)
		}
		return nil
	})
	switch {
	case errors.Is(err, errTableLocked):
		p.logger.Info("the target table is locked by another session: not checked for emptiness", "table", t.String())
		return true, false, nil
	case err != nil:
		return true, false, err
	}
	return true, !has, nil
}

// errTableLocked ends TableState's transaction when the table stayed
// locked past tableStateLockWait.
var errTableLocked = errors.New("table locked by another session")

// tableStateLockWait is how long TableState waits for a lock on the table
// before taking it as not empty.
const tableStateLockWait = 2 * time.Second
