package postgres

import (
	"context"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
	"github.com/jackc/pgx/v5"
)

// leaveUnchanged returns the rows of kept the table does not hold as they
// are (changedRows: absent, stored with another hash, or marked deleted),
// asked with their keys and hashes alone, read-only, before anything else
// of the page is converted or sent: an unchanged re-sync then sends two
// short arrays a page rather than one array per column, and the merge
// does not run (docs/performance.md, "Round five"). Into a table holding
// only rows this sink inserted (fresh.go) nothing can be stored as is and
// nothing is asked; a verifying run compares every column in the merge
// (pgStoredAsIs).
func (p *Sink) leaveUnchanged(ctx context.Context, tx pgx.Tx, op string, t *contract.Table, types map[string]string, kept []contract.Row) ([]contract.Row, error) {
	if len(kept) == 0 || t.Verify {
		return kept, nil
	}
	own, err := p.ownRowsOnly(ctx, tx, t)
	if err != nil {
		return nil, p.dbError(op, err)
	}
	if own {
		return kept, nil
	}
	changed, _, err := p.changedRows(ctx, tx, op, t, types, kept)
	return changed, err
}

// querier runs a query in a page's transaction (pgx.Tx) or, outside any,
// on the connection (*pgx.Conn).
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// changedOutside returns the rows of kept the table does not hold as they
// are (changedRows), asked on conn outside any transaction, and true:
// upsert merges those in the page's transaction without asking again,
// and with none it is done without one. False when the page may write
// anything else, or the check failed: the page then goes as before, its
// transaction checking. An unchanged page sends one statement, no BEGIN
// and no COMMIT
// (docs/performance.md, "Round seven: an unchanged PostgreSQL page
// without a transaction"). Only where the page's transaction would hold
// nothing but the check and the merge of the rows it finds changed:
//   - nothing else joins the transaction (the caller asks only when
//     upsert's before is nil: no state committing in it, no fence, both
//     of which must commit a page that wrote nothing too);
//   - no tombstones, no child tables, not a verifying run (which compares
//     every column in the merge);
//   - the table known since the last Prepare: its column types read, none
//     to widen, and not a table holding only this sink's rows (fresh.go:
//     nothing is checked there, the page is copied or merged whole).
//
// The check is a read under READ COMMITTED, in the transaction as
// outside it: a statement's snapshot of its own, no lock held on the rows
// it leaves, and nothing written by the transaction before it. So the
// rows it finds changed are those the check in the transaction would
// find, as if it had run a moment earlier, and the merge is handed them
// as it is handed the transaction's (its NOT EXISTS and ON CONFLICT …
// WHERE leave a row stored as is in the meantime); a page that wrote no
// row raises no progress marker, fires no feed trigger and counts nothing
// Dropped, in a transaction or not.
func (p *Sink) changedOutside(ctx context.Context, conn *pgx.Conn, op string, t *contract.Table, kept, tombs []contract.Row) ([]contract.Row, bool) {
	if len(tombs) > 0 || len(t.Children) > 0 || t.Verify || len(kept) == 0 {
		return nil, false
	}
	key := sqlkit.QuoteTable(t)
	types, ok := p.types[key]
	if !ok {
		return nil, false
	}
	if own, ok := p.own[key]; !ok || own {
		return nil, false
	}
	for i := range t.Columns {
		if widens(&t.Columns[i], types) {
			return nil, false
		}
	}
	changed, _, err := p.changedRows(ctx, conn, op, t, types, kept)
	if err != nil {
		return nil, false
	}
	return changed, true
}
