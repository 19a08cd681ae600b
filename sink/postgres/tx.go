package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// txEnd is how inTx ends a transaction whose work succeeded.
type txEnd bool

const (
	// commitTx commits it; a failed commit is the call's error.
	commitTx txEnd = true
	// rollbackTx rolls it back: the transaction only read, and what it
	// read stands whatever the rollback says.
	rollbackTx txEnd = false
)

// inTx runs fn in a transaction of its own on the sink's connection
// (reconnecting when it was lost) and ends it with end when fn returns
// nil. The caller holds p.mu. A failed connect is returned as connect
// made it; a failed BEGIN or COMMIT as p.dbError(op, err) (a lost
// connection is Transient); fn's error as fn returned it, fn mapping its
// own statements' errors. The transaction is rolled back whenever it was
// not committed, under rollbackContext, so a cancelled ctx still rolls it
// back and a server that does not answer cannot hold the caller.
func (p *Sink) inTx(ctx context.Context, op string, end txEnd, fn func(pgx.Tx) error) error {
	conn, err := p.connect(ctx)
	if err != nil {
		return err
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return p.dbError(op, err)
	}
	defer func() {
		rctx, cancel := rollbackContext(ctx)
		defer cancel()
		_ = tx.Rollback(rctx)
	}()
	if err := fn(tx); err != nil {
		return err
	}
	if end == rollbackTx {
		return nil
	}
	return p.nilOr(op, tx.Commit(ctx))
}
