package sqlite

import (
	"context"
	"database/sql"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

// A first load writes into an empty table, where the unchanged-rows query
// (sqliteSameSQL) can find nothing: binding and joining every page's keys
// and hashes to it was 7.5% of a first load's CPU (issue 31). So while the
// table holds only rows these statements inserted since they found it
// empty, Upsert skips the query and sends every row to the writes, which
// decide alone: a key met again (a record listed twice) is not inserted,
// and its update's WHERE leaves it unchanged when its hash is the same.
// The counts stay exact, since they come from the writes' change counts.
// The first page with a row not inserted ends the skipping for these
// statements: rows from elsewhere may be there. A verifying run compares
// every mapped column in the query and always asks it.

// table states of sqliteStmts.empty
const (
	emptyUnknown = iota // not asked yet
	emptyOwn            // empty when asked, and every row written since was inserted
	emptyNo             // held rows, or a write met a stored row
)

// ownRowsOnly reports whether the table holds only rows these statements
// inserted since they found it empty, asking on first use in tx.
func (st *sqliteStmts) ownRowsOnly(ctx context.Context, tx *sql.Tx, t *contract.Table) (bool, error) {
	if t.Verify {
		return false, nil
	}
	if st.empty == emptyUnknown {
		var empty bool
		if err := tx.QueryRowContext(ctx, `SELECT NOT EXISTS (SELECT 1 FROM `+sqlkit.QuoteIdent(t.Name)+`)`).Scan(&empty); err != nil {
			return false, err
		}
		st.empty = emptyNo
		if empty {
			st.empty = emptyOwn
		}
	}
	return st.empty == emptyOwn, nil
}
