package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

// splitTombstones splits the indexes of the rows to write (kept) into
// those written and those whose record was a tombstone (target.tombstone).
func splitTombstones(rows []contract.Row, kept []int) (write, tombs []int) {
	if !slices.ContainsFunc(kept, func(ri int) bool { return rows[ri].Tombstone }) {
		return kept, nil // the common page: nothing to copy
	}
	for _, ri := range kept {
		if rows[ri].Tombstone {
			tombs = append(tombs, ri)
		} else {
			write = append(write, ri)
		}
	}
	return write, tombs
}

// bury deletes the stored rows of the tombstones' keys, or on a soft
// table marks those not marked yet, in tx; it returns how many rows it
// deleted or marked. A tombstone whose row is absent changes nothing; a
// row a trigger kept is a *contract.Error (contract.KeptRows).
func bury(ctx context.Context, tx *sql.Tx, t *contract.Table, st *sqliteStmts, all [][]any, tombs []int) (int64, error) {
	if len(tombs) == 0 {
		return 0, nil
	}
	tuple := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(t.Key)), ", ") + ")"
	var n int64
	for start := 0; start < len(tombs); start += countBatch {
		batch := tombs[start:min(start+countBatch, len(tombs))]
		var args []any
		where := fmt.Sprintf("(%s) IN (VALUES %s)", sqlkit.QuoteList(t.Key), strings.TrimSuffix(strings.Repeat(tuple+", ", len(batch)), ", "))
		q := "DELETE FROM " + sqlkit.QuoteIdent(t.Name) + " WHERE " + where
		if t.Soft() {
			q = fmt.Sprintf("UPDATE %s SET %s = ? WHERE %[2]s IS NULL AND %s", sqlkit.QuoteIdent(t.Name), sqlkit.QuoteIdent(contract.ColDeletedAt), where)
			args = append(args, formatTime(t.Clock()))
		}
		for _, ri := range batch {
			for _, i := range st.keyIdx {
				args = append(args, all[ri][i])
			}
		}
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return 0, err
		}
		c, err := res.RowsAffected()
		if err != nil {
			return 0, err
		}
		// Fewer rows than tombstones: absent rows, or rows a trigger kept
		// in place (contract.KeptRows), counted only then.
		if c < int64(len(batch)) {
			live, keys := "", args
			if t.Soft() {
				live, keys = sqlkit.QuoteIdent(contract.ColDeletedAt)+" IS NULL AND ", args[1:]
			}
			var kept int64
			if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM "+sqlkit.QuoteIdent(t.Name)+" WHERE "+live+where, keys...).Scan(&kept); err != nil {
				return 0, err
			}
			if kept > 0 {
				return 0, contract.KeptRows(t, "page's tombstones", t.Soft(), kept)
			}
		}
		n += c
	}
	return n, nil
}
