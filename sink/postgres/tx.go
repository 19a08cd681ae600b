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
// made it; the rest is inTxOn's.
func (p *Sink) inTx(ctx context.Context, op string, end txEnd, fn func(pgx.Tx) error) error {
	conn, err := p.connect(ctx)
	if err != nil {
		return err
	}
	return p.inTxOn(ctx, conn, op, end, fn)
}

// inTxOn is inTx on conn, a connection the caller took from connect and
// has used since: one lost meanwhile is not replaced, its BEGIN fails as a
// lost connection (Transient): upsert's check outside the transaction
// that loses the connection fails the page (docs/performance.md, "Round
// seven: an unchanged PostgreSQL page without a transaction"). A failed
// BEGIN or COMMIT is returned as p.dbError(op, err); fn's error as fn
// returned it, fn mapping its own statements' errors. The transaction is
// rolled back whenever it was not committed, under rollbackContext, so a
// cancelled ctx still rolls it back and a server that does not answer
// cannot hold the caller.
func (p *Sink) inTxOn(ctx context.Context, conn *pgx.Conn, op string, end txEnd, fn func(pgx.Tx) error) error {
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
