package postgres

import (
	"context"

	"github.com/idemsync/idemsync/contract"
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
