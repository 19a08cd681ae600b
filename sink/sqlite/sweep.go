package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/internal/failpoint"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

var _ contract.Sink = (*Sink)(nil)

// seenTable is the temporary table a sweep loads the seen keys into, and
// priorTable the one it loads the prior pass's keys into (when a row is
// missing from seenTable); they live in the connection's temp schema and
// are dropped after the sweep.
const (
	seenTable  = `temp."_idemsync_seen"`
	priorTable = `temp."_idemsync_prior"`
)

// seenBatch is how many keys one insert into seenTable binds, at most.
const seenBatch = 500

// KeyForms returns each row's key as bound by Upsert (sqliteKeyValue: the
// form the column's affinity stores), encoded with sqlkit.AppendKey (see
// contract.Sink).
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
	buf := make([]byte, 0, 8*len(rows))
	ends := make([]int, len(rows))
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
		if buf, err = sqlkit.AppendKey(buf, key); err != nil {
			return nil, contract.Errorf(contract.Permanent, "%s: %w", op, err)
		}
		ends[ri] = len(buf)
	}
	return sqlkit.SplitKeys(buf, ends), nil
}

// Sweep deletes (hard) or marks (soft) the rows of t whose key neither
// req.Keys nor req.Prior holds, in one transaction (see contract.Sink):
// the keys go into temporary tables whose columns have the key columns'
// declared types (so SQLite compares them as the unique key does), the
// rows with no match are removed, and the transaction rolls back when
// they exceed req.MaxRatio of the live rows. When no live row is missing
// from req.Keys (an unchanged re-sync), it stops after one count, or
// after none when the pass's tally stands for it
// (contract.SweepRequest.LiveTally): the prior pass's keys are not even
// read. Errors are *contract.Error as for
// Upsert, or wrap the error of req.Keys or req.Prior.
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
	defer tx.Rollback() // also undoes the temporary tables' creation
	switch all, err := seenAll(ctx, tx, t, req); {
	case err != nil:
		return res, s.wrap(op, err)
	case all:
		failpoint.Hit("sweep-loaded")
		failpoint.Hit("sweep-applied")
		if err := tx.Commit(); err != nil {
			return res, s.wrap(op, err)
		}
		return res, nil
	}
	if err := loadKeys(ctx, tx, seenTable, t, st, req.Keys); err != nil {
		return res, s.wrap(op, err)
	}
	failpoint.Hit("sweep-loaded")
	tbl := sqlkit.QuoteIdent(t.Name)
	missed := sweepWhere(t, seenTable) + " AND " + liveWhere(t)
	var gone int64
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM `+tbl+` WHERE `+missed).Scan(&gone); err != nil {
		return res, s.wrap(op, err)
	}
	if gone > 0 && req.Prior != nil {
		if res, err = s.removeMissed(ctx, tx, t, st, req, missed, gone); err != nil {
			return contract.SweepResult{}, err
		}
	}
	res.Pending = gone - res.Deleted
	if res.Deleted > 0 {
		if err := sweepChildren(ctx, tx, t); err != nil { // children.go
			if ce := (*contract.Error)(nil); errors.As(err, &ce) {
				return contract.SweepResult{}, err // a child row a trigger kept
			}
			return contract.SweepResult{}, s.wrap(op, err)
		}
	}
	failpoint.Hit("sweep-applied")
	if req.Hold != nil {
		if err := req.Hold(ctx, nil); err != nil {
			return contract.SweepResult{}, err
		}
	}
	for _, tmp := range []string{seenTable, priorTable} {
		if _, err := tx.ExecContext(ctx, `DROP TABLE IF EXISTS `+tmp); err != nil {
			return contract.SweepResult{}, s.wrap(op, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return contract.SweepResult{}, s.wrap(op, err)
	}
	return res, nil
}

// seenAll reports whether the pass saw every live row of t, without
// loading its keys: the pass's req.SeenLive distinct keys each name a live
// row (contract.SweepRequest.SeenLive), so as many live rows as that are
// those rows. The live rows are the pass's tally when it equals SeenLive
// (contract.SweepRequest.LiveTally: the table is not even counted), else
// counted. It holds only where distinct recorded keys are distinct rows:
// no index or column of t compares keys under a collation (COLLATE NOCASE
// matches "BOB" and "Bob", one row for two keys) and no trigger may have
// dropped a row the upsert wrote. Otherwise, or when the counts differ,
// the sweep loads the keys.
func seenAll(ctx context.Context, tx *sql.Tx, t *contract.Table, req contract.SweepRequest) (bool, error) {
	if req.SeenLive <= 0 {
		return false, nil
	}
	const inexactQ = `SELECT count(*) FROM sqlite_schema WHERE tbl_name = ? COLLATE NOCASE AND (type = 'trigger' OR sql LIKE '%COLLATE%')`
	var inexact int64
	live := req.LiveTally
	var err error
	if live == req.SeenLive {
		err = tx.QueryRowContext(ctx, inexactQ, t.Name).Scan(&inexact)
	} else {
		err = tx.QueryRowContext(ctx, `SELECT (`+inexactQ+`), (SELECT count(*) FROM `+sqlkit.QuoteIdent(t.Name)+` WHERE `+liveWhere(t)+`)`,
			t.Name).Scan(&inexact, &live)
	}
	return err == nil && inexact == 0 && live == req.SeenLive, err
}

// removeMissed removes (or marks) the rows of t that this pass missed
// (missed: missedN rows) and the prior pass missed too, and that were not written since
// it started; it checks the share against req.MaxRatio (a refusal is
// returned, and the caller's transaction rolls back).
func (s *Sink) removeMissed(ctx context.Context, tx *sql.Tx, t *contract.Table, st *sqliteStmts, req contract.SweepRequest, missed string, missedN int64) (contract.SweepResult, error) {
	var res contract.SweepResult
	op := "sweep " + t.String()
	if err := loadKeys(ctx, tx, priorTable, t, st, req.Prior); err != nil {
		return res, s.wrap(op, err)
	}
	tbl := sqlkit.QuoteIdent(t.Name)
	synced := sqlkit.QuoteIdent(contract.ColSyncedAt)
	written := func(arg int) string {
		return fmt.Sprintf("(%s IS NULL OR julianday(%s) < julianday(?%d))", synced, synced, arg)
	}
	gone := missed + " AND " + sweepWhere(t, priorTable) + " AND " + written(1)
	args := []any{formatTime(req.PriorStart)}
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM `+tbl+` WHERE `+liveWhere(t)).Scan(&res.Live); err != nil {
		return res, s.wrap(op, err)
	}
	// After a refused sweep only the rows written before the refusals
	// count against the ratio (contract.SweepRequest.WrittenBefore).
	counted := int64(-1)
	if !req.WrittenBefore.IsZero() {
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM `+tbl+` WHERE `+gone+` AND `+written(2),
			formatTime(req.PriorStart), formatTime(req.WrittenBefore)).Scan(&counted); err != nil {
			return res, s.wrap(op, err)
		}
	}
	// Two passes whose misses were no picture of the source remove
	// nothing (contract.SweepRequest.PriorUntrue). The prior pass's
	// pending rows count only while the table still holds them live
	// (priorMissed: a row since removed, by a target put back or by hand,
	// was not listed again).
	var priorMissed, removable int64
	if err := tx.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(CASE WHEN `+missed+` AND `+written(1)+` THEN 1 ELSE 0 END), 0) FROM `+tbl+
		` WHERE `+liveWhere(t)+` AND `+sweepWhere(t, priorTable), args...).Scan(&priorMissed, &removable); err != nil {
		return res, s.wrap(op, err)
	}
	if req.PriorPending > priorMissed {
		req.PriorPending = priorMissed
	}
	if listed, mass, untrue := req.PriorUntrue(missedN, removable, req.Base(res.Live)); untrue {
		res.PriorListed, res.MassMissed, res.Untrue, res.Base = listed, mass, removable, req.Base(res.Live)
		return res, nil
	}
	// Remove first, then check the share: a refusal rolls back, and the
	// common case (nothing or little to remove) costs one pass, not two.
	q := `DELETE FROM ` + tbl + ` WHERE ` + gone
	if req.Mode == contract.DeletesSoft {
		q = fmt.Sprintf(`UPDATE %s SET %s = ?2 WHERE %s`, tbl, sqlkit.QuoteIdent(contract.ColDeletedAt), gone)
		args = append(args, formatTime(req.At))
	}
	r, err := tx.ExecContext(ctx, q, args...)
	if err != nil {
		return res, s.wrap(op, err)
	}
	if res.Deleted, err = r.RowsAffected(); err != nil {
		return res, s.wrap(op, err)
	}
	// Fewer rows than counted: a row kept in place by a trigger
	// (RAISE(IGNORE)) is still one to remove, and the table is not the
	// source's (contract.KeptRows). Counted again only then.
	if res.Deleted < removable {
		var kept int64
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM `+tbl+` WHERE `+gone, args[0]).Scan(&kept); err != nil {
			return res, s.wrap(op, err)
		}
		if kept > 0 {
			return contract.SweepResult{}, contract.KeptRows(t, "sweep", req.Mode == contract.DeletesSoft, kept)
		}
	}
	res.Base = req.Base(res.Live)
	if counted < 0 {
		counted = res.Deleted
	}
	if err := contract.CheckSweepRatio(t, counted, res.Live, req); err != nil {
		return contract.SweepResult{}, err
	}
	return res, nil
}

// loadKeys creates the temporary table name with one column per key
// column, declared like it, and a primary key over them, and inserts every
// key of keys.
func loadKeys(ctx context.Context, tx *sql.Tx, name string, t *contract.Table, st *sqliteStmts, keys func(func(string) error) error) error {
	var defs, names []string
	for k := range t.Key {
		defs = append(defs, fmt.Sprintf("k%d %s", k, st.keyDecl[k]))
		names = append(names, fmt.Sprintf("k%d", k))
	}
	if _, err := tx.ExecContext(ctx, `DROP TABLE IF EXISTS `+name); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`CREATE TABLE %s (%s, PRIMARY KEY (%s)) WITHOUT ROWID`,
		name, strings.Join(defs, ", "), strings.Join(names, ", "))); err != nil {
		return err
	}
	perKey := len(t.Key)
	batch := max(1, min(seenBatch, 32000/perKey))
	tuple := "(" + strings.TrimSuffix(strings.Repeat("?, ", perKey), ", ") + ")"
	insert := func(n int) string {
		return fmt.Sprintf(`INSERT OR IGNORE INTO %s VALUES %s`, name, strings.TrimSuffix(strings.Repeat(tuple+", ", n), ", "))
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

// sweepWhere returns the condition of a row whose key is not in the
// temporary table keys (seenTable, priorTable). The table's key columns
// stand on the left of NOT IN, so their own collation decides as it does
// for the unique key (a key column declared COLLATE NOCASE matches "BOB"
// to "Bob", as the upsert did).
func sweepWhere(t *contract.Table, keys string) string {
	cols := make([]string, len(t.Key))
	seen := make([]string, len(t.Key))
	for k, name := range t.Key {
		cols[k] = sqlkit.QuoteIdent(t.Name) + "." + sqlkit.QuoteIdent(name)
		seen[k] = fmt.Sprintf("k%d", k)
	}
	return fmt.Sprintf("(%s) NOT IN (SELECT %s FROM %s)", strings.Join(cols, ", "), strings.Join(seen, ", "), keys)
}

// liveWhere is the condition of a live row: not marked deleted (always
// true on a table that does not mark).
func liveWhere(t *contract.Table) string {
	if t.Soft() {
		return sqlkit.QuoteIdent(contract.ColDeletedAt) + " IS NULL"
	}
	return "1"
}

// LiveRows counts t's rows not marked deleted, 0 when t does not exist
// (see contract.Sink).
func (s *Sink) LiveRows(ctx context.Context, t *contract.Table) (int64, error) {
	exists, _, err := s.TableState(ctx, t)
	if err != nil || !exists {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	op := "count the live rows of " + t.String()
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return 0, s.wrap(op, err)
	}
	defer conn.Close()
	// The count reads every page of the table once, so it goes through a
	// page cache of a few pages: through the connection's whole cache
	// (2 MB) it would fill it with pages read once, and Close would free
	// them one by one (docs/deletions.md, "What deletions cost"). Not
	// marked is every row on a table that does not mark: a count with
	// no WHERE counts a table's pages without reading its rows.
	var size int64
	if err := conn.QueryRowContext(ctx, `PRAGMA cache_size`).Scan(&size); err != nil {
		return 0, s.wrap(op, err)
	}
	if _, err := conn.ExecContext(ctx, `PRAGMA cache_size = 16`); err != nil {
		return 0, s.wrap(op, err)
	}
	q := `SELECT count(*) FROM ` + sqlkit.QuoteIdent(t.Name)
	if t.Soft() {
		q += ` WHERE ` + liveWhere(t)
	}
	var n int64
	err = conn.QueryRowContext(ctx, q).Scan(&n)
	if _, rerr := conn.ExecContext(context.WithoutCancel(ctx), fmt.Sprintf(`PRAGMA cache_size = %d`, size)); err == nil {
		err = rerr
	}
	if err != nil {
		return 0, s.wrap(op, err)
	}
	return n, nil
}
