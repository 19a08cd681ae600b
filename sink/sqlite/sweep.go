package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/internal/failpoint"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

var _ contract.Sweeper = (*Sink)(nil)

// seenTable is the temporary table a sweep loads the seen keys into; it
// lives in the connection's temp schema and is dropped after the sweep.
const seenTable = `temp."_idemsync_seen"`

// seenBatch is how many keys one insert into seenTable binds, at most.
const seenBatch = 500

// KeyForms returns each row's key as bound by Upsert (sqliteKeyValue: the
// form the column's affinity stores), encoded with sqlkit.EncodeKey (see
// contract.Sweeper).
func (s *Sink) KeyForms(ctx context.Context, t *contract.Table, rows []contract.Row) ([]string, error) {
	if len(rows) == 0 {
		return nil, nil // reads nothing: the table may not be prepared yet (the engine's probe)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	op := "keys of " + t.String()
	st, err := s.statements(ctx, t)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	// Only the key columns are converted: the rest of the row does not
	// matter here, and converting it (JSON compaction) would cost as much
	// as the upsert's own conversion.
	out := make([]string, len(rows))
	key := make([]any, len(st.keyIdx))
	for ri, r := range rows {
		if len(r.Values) != len(t.Columns) {
			return nil, contract.Errorf(contract.Permanent, "%s: row has %d values for %d columns", op, len(r.Values), len(t.Columns))
		}
		for k, i := range st.keyIdx {
			v, err := sqliteValue(&t.Columns[i], r.Values[i])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", op, err)
			}
			key[k] = sqliteKeyValue(t.Columns[i].Type, st.keyAff[k], v)
		}
		if out[ri], err = sqlkit.EncodeKey(key); err != nil {
			return nil, contract.Errorf(contract.Permanent, "%s: %w", op, err)
		}
	}
	return out, nil
}

// Sweep deletes (hard) or marks (soft) the rows of t whose key is not
// among req.Keys, in one transaction (see contract.Sweeper): the keys go
// into a temporary table whose columns have the key columns' declared
// types (so SQLite compares them as the unique key does), the rows with no
// match are removed, and the transaction rolls back when they exceed
// req.MaxRatio of the live rows. Errors are *contract.Error as for Upsert,
// or wrap the error of req.Keys.
func (s *Sink) Sweep(ctx context.Context, t *contract.Table, req contract.SweepRequest) (contract.SweepResult, error) {
	var res contract.SweepResult
	s.mu.Lock()
	defer s.mu.Unlock()
	op := "sweep " + t.String()
	st, err := s.statements(ctx, t)
	if err != nil {
		return res, s.wrap(op, err)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return res, s.wrap(op, err)
	}
	defer tx.Rollback() // also undoes seenTable's creation
	if err := loadSeen(ctx, tx, t, st, req.Keys); err != nil {
		return res, s.wrap(op, err)
	}
	failpoint.Hit("sweep-loaded")
	gone, live := sweepWhere(t)
	tbl := sqlkit.QuoteIdent(t.Name)
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM `+tbl+` WHERE `+live).Scan(&res.Live); err != nil {
		return res, s.wrap(op, err)
	}
	// After a refused sweep only the rows written before the refusals
	// count against the ratio (contract.SweepRequest.WrittenBefore).
	counted := int64(-1)
	if !req.WrittenBefore.IsZero() {
		synced := sqlkit.QuoteIdent(contract.ColSyncedAt)
		if err := tx.QueryRowContext(ctx, fmt.Sprintf(`SELECT count(*) FROM %s WHERE %s AND %s AND (%s IS NULL OR julianday(%s) < julianday(?))`,
			tbl, live, gone, synced, synced), formatTime(req.WrittenBefore)).Scan(&counted); err != nil {
			return res, s.wrap(op, err)
		}
	}
	// Remove first, then check the share: a refusal rolls back, and the
	// common case (nothing or little to remove) costs one pass, not two.
	q := `DELETE FROM ` + tbl + ` WHERE ` + gone
	args := []any{}
	if req.Mode == contract.DeletesSoft {
		q = fmt.Sprintf(`UPDATE %s SET %s = ? WHERE %s AND %s`, tbl, sqlkit.QuoteIdent(contract.ColDeletedAt), live, gone)
		args = append(args, formatTime(req.At))
	}
	r, err := tx.ExecContext(ctx, q, args...)
	if err != nil {
		return res, s.wrap(op, err)
	}
	if res.Deleted, err = r.RowsAffected(); err != nil {
		return res, s.wrap(op, err)
	}
	res.Base = req.Base(res.Live)
	if counted < 0 {
		counted = res.Deleted
	}
	if err := contract.CheckSweepRatio(t, counted, res.Live, req); err != nil {
		return contract.SweepResult{}, err
	}
	failpoint.Hit("sweep-applied")
	if _, err := tx.ExecContext(ctx, `DROP TABLE `+seenTable); err != nil {
		return contract.SweepResult{}, s.wrap(op, err)
	}
	if err := tx.Commit(); err != nil {
		return contract.SweepResult{}, s.wrap(op, err)
	}
	return res, nil
}

// loadSeen creates seenTable with one column per key column, declared
// like it, and a primary key over them, and inserts every key of keys.
func loadSeen(ctx context.Context, tx *sql.Tx, t *contract.Table, st *sqliteStmts, keys func(func(string) error) error) error {
	var defs, names []string
	for k := range t.Key {
		defs = append(defs, fmt.Sprintf("k%d %s", k, st.keyDecl[k]))
		names = append(names, fmt.Sprintf("k%d", k))
	}
	if _, err := tx.ExecContext(ctx, `DROP TABLE IF EXISTS `+seenTable); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`CREATE TABLE %s (%s, PRIMARY KEY (%s)) WITHOUT ROWID`,
		seenTable, strings.Join(defs, ", "), strings.Join(names, ", "))); err != nil {
		return err
	}
	perKey := len(t.Key)
	batch := max(1, min(seenBatch, 32000/perKey))
	tuple := "(" + strings.TrimSuffix(strings.Repeat("?, ", perKey), ", ") + ")"
	insert := func(n int) string {
		return fmt.Sprintf(`INSERT OR IGNORE INTO %s VALUES %s`, seenTable, strings.TrimSuffix(strings.Repeat(tuple+", ", n), ", "))
	}
	full, err := tx.PrepareContext(ctx, insert(batch))
	if err != nil {
		return err
	}
	defer full.Close()
	args := make([]any, 0, batch*perKey)
	flush := func() error {
		if len(args) == 0 {
			return nil
		}
		var err error
		if len(args) == batch*perKey {
			_, err = full.ExecContext(ctx, args...)
		} else {
			_, err = tx.ExecContext(ctx, insert(len(args)/perKey), args...)
		}
		args = args[:0]
		return err
	}
	err = keys(func(k string) error {
		vals, err := sqlkit.DecodeKey(k, args)
		if err != nil {
			return err
		}
		if len(vals)-len(args) != perKey {
			return fmt.Errorf("recorded key has %d values for %d key columns (was target.key changed?)", len(vals)-len(args), perKey)
		}
		args = vals
		if len(args) == batch*perKey {
			return flush()
		}
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}

// sweepWhere returns the conditions of a sweep: gone (the row's key is
// not in seenTable) and live (the row is not marked deleted; always true
// on a table that does not mark). The table's key columns stand on the
// left of NOT IN, so their own collation decides as it does for the
// unique key (a key column declared COLLATE NOCASE matches "BOB" to
// "Bob", as the upsert did).
func sweepWhere(t *contract.Table) (gone, live string) {
	cols := make([]string, len(t.Key))
	seen := make([]string, len(t.Key))
	for k, name := range t.Key {
		cols[k] = sqlkit.QuoteIdent(t.Name) + "." + sqlkit.QuoteIdent(name)
		seen[k] = fmt.Sprintf("k%d", k)
	}
	gone = fmt.Sprintf("(%s) NOT IN (SELECT %s FROM %s)", strings.Join(cols, ", "), strings.Join(seen, ", "), seenTable)
	live = "1"
	if t.Soft() {
		live = sqlkit.QuoteIdent(contract.ColDeletedAt) + " IS NULL"
	}
	return gone, live
}

// LiveRows counts t's rows not marked deleted, 0 when t does not exist
// (see contract.Sweeper).
func (s *Sink) LiveRows(ctx context.Context, t *contract.Table) (int64, error) {
	exists, _, err := s.TableState(ctx, t)
	if err != nil || !exists {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, live := sweepWhere(t)
	var n int64
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM `+sqlkit.QuoteIdent(t.Name)+` WHERE `+live).Scan(&n); err != nil {
		return 0, s.wrap("count the live rows of "+t.String(), err)
	}
	return n, nil
}
