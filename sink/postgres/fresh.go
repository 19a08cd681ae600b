package postgres

import (
	"context"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
	"github.com/jackc/pgx/v5"
)

// The merge leaves out the records stored unchanged (pgStoredAsIs), one
// index probe a record. Into an empty table (a first load) the probe can
// find nothing, so while the table holds only rows this sink inserted since
// it found it empty, the merge goes without the filter: its ON CONFLICT
// still decides alone for a key met again (a record listed twice), and
// the counts come from its RETURNING. The first page with a row not
// inserted ends that for the table until the next Prepare: rows from
// elsewhere may be there.

// ownRowsOnly reports whether t holds only rows this sink inserted since
// it found t empty, asking on first use after Prepare in tx.
func (p *Sink) ownRowsOnly(ctx context.Context, tx pgx.Tx, t *contract.Table) (bool, error) {
	if t.Verify {
		return false, nil // no filter to skip
	}
	key := sqlkit.QuoteTable(t)
	own, ok := p.own[key]
	if !ok {
		if err := tx.QueryRow(ctx, `SELECT NOT EXISTS (SELECT 1 FROM `+key+`)`).Scan(&own); err != nil {
			return false, err
		}
		if p.own == nil {
			p.own = map[string]bool{}
		}
		p.own[key] = own
	}
	return own, nil
}
