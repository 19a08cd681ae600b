package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/internal/failpoint"
	"github.com/idemsync/idemsync/sink/sqlkit"
	"github.com/jackc/pgx/v5"
)

var _ contract.Sink = (*Sink)(nil)

// seenTable is the temporary table a sweep loads the seen keys into, and
// priorTable the one it loads the prior pass's keys into (when a row is
// missing from seenTable); both are dropped when the transaction ends.
const (
	seenTable  = `"_idemsync_seen"`
	priorTable = `"_idemsync_prior"`
)

// seenBatch is how many keys one insert into seenTable sends, at most.
const seenBatch = 10000

// KeyForms returns each row's key as PostgreSQL's text input of each key
// column (pgText), encoded with sqlkit.AppendKey; Sweep casts them to the
// key columns' types, so keys the table holds equal match (see
// contract.Sink).
func (p *Sink) KeyForms(_ context.Context, t *contract.Table, rows []contract.Row) ([]string, error) {
	idx := keyIndexes(t)
	buf := make([]byte, 0, 8*len(rows))
	ends := make([]int, len(rows))
	key := make([]any, len(idx))
	for ri, r := range rows {
		if len(r.Values) != len(t.Columns) {
			return nil, contract.Errorf(contract.Permanent, "keys of %s: row has %d values for %d columns", t, len(r.Values), len(t.Columns))
		}
		for k, i := range idx {
			s, err := pgText(&t.Columns[i], r.Values[i])
			if err != nil {
				return nil, fmt.Errorf("keys of %s: %w", t, err)
			}
			if s == nil {
				key[k] = nil
			} else {
				key[k] = *s
			}
		}
		var err error
		if buf, err = sqlkit.AppendKey(buf, key); err != nil {
			return nil, contract.Errorf(contract.Permanent, "keys of %s: %w", t, err)
		}
		ends[ri] = len(buf)
	}
	return sqlkit.SplitKeys(buf, ends), nil
}

// keyIndexes returns the index in t.Columns of each key column, in t.Key's
// order.
func keyIndexes(t *contract.Table) []int {
	var idx []int
	for _, k := range t.Key {
		for i, c := range t.Columns {
			if c.Name == k {
				idx = append(idx, i)
			}
		}
	}
	return idx
}

// Sweep deletes (hard) or marks (soft) the rows of t whose key neither
// req.Keys nor req.Prior holds, in one transaction (see contract.Sink):
// the keys go into temporary tables with the key columns' types (ON
// COMMIT DROP), the rows with no match are removed, and the transaction
// rolls back when they exceed req.MaxRatio of the live rows. When no live
// row is missing from req.Keys (an unchanged re-sync), it stops after one
// count, or after none when the pass's tally stands for it
// (contract.SweepRequest.LiveTally): the prior pass's keys are not even
// read. Errors are *contract.Error
// as for Upsert, or wrap the error of req.Keys or req.Prior.
func (p *Sink) Sweep(ctx context.Context, t *contract.Table, req contract.SweepRequest) (contract.SweepResult, error) {
	op := "sweep " + t.String()
	p.mu.Lock()
	defer p.mu.Unlock()
	var res contract.SweepResult
	var ptx *pageTx
	err := p.inTx(ctx, op, commitTx, func(tx pgx.Tx) (err error) {
		ptx = &pageTx{p: p, tx: tx, schema: t.Schema}
		res, err = p.sweep(ctx, tx, op, t, req, ptx)
		return err
	})
	if err != nil {
		return contract.SweepResult{}, err
	}
	if ptx.created != "" {
		p.fenced[ptx.created] = true // only once committed
	}
	return res, nil
}

// sweep is Sweep in its transaction tx, ptx being tx as req.Hold sees it.
func (p *Sink) sweep(ctx context.Context, tx pgx.Tx, op string, t *contract.Table, req contract.SweepRequest, ptx *pageTx) (contract.SweepResult, error) {
	var res contract.SweepResult
	types, err := p.columnTypes(ctx, tx, t)
	if err != nil {
		return res, p.dbError(op, err)
	}
	switch all, err := seenAll(ctx, tx, t, types, req); {
	case err != nil:
		return res, p.dbError(op, err)
	case all:
		failpoint.Hit("sweep-loaded")
		failpoint.Hit("sweep-applied")
		return res, nil
	}
	if err := sweepPlanner(ctx, tx); err != nil {
		return res, p.dbError(op, err)
	}
	if err := p.loadKeys(ctx, tx, seenTable, t, types, req.Keys); err != nil {
		return res, p.dbError(op, err)
	}
	failpoint.Hit("sweep-loaded")
	missed := missedWhere(t)
	var gone int64
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM `+sqlkit.QuoteTable(t)+` AS "_t" WHERE `+missed).Scan(&gone); err != nil {
		return res, p.dbError(op, err)
	}
	if gone > 0 && req.Prior != nil {
		if res, err = p.removeMissed(ctx, tx, t, types, req, gone); err != nil {
			return contract.SweepResult{}, err
		}
	}
	res.Pending = gone - res.Deleted
	if res.Deleted > 0 {
		if err := p.sweepChildren(ctx, tx, op, t); err != nil { // children.go
			return contract.SweepResult{}, err
		}
	}
	failpoint.Hit("sweep-applied")
	if req.Hold != nil {
		if err := req.Hold(ctx, ptx); err != nil {
			return contract.SweepResult{}, err
		}
	}
	return res, nil
}

// exactKeyTypes are the key column types whose text form (pgText) is the
// one form of each value the column holds: two distinct recorded keys
// are two distinct rows (a numeric "1.0" and "1", or a uuid in two cases,
// are one).
var exactKeyTypes = map[contract.ColumnType]bool{contract.TypeText: true, contract.TypeInteger: true, contract.TypeTimestamp: true}

// seenAll reports whether the pass saw every live row of t, without
// loading its keys: the pass's req.SeenLive distinct keys each name a live
// row (contract.SweepRequest.SeenLive), so as many live rows as that are
// those rows. The live rows are the pass's tally when it equals SeenLive
// (contract.SweepRequest.LiveTally: the table is not even counted), else
// counted. It holds only where distinct recorded keys are distinct rows:
// key columns of the types idemsync creates for text, integer and
// timestamp, under a deterministic built-in collation (default, C or
// POSIX), and no trigger on t that may have dropped a row the upsert
// wrote. Otherwise, or when the counts differ, the sweep loads the keys.
func seenAll(ctx context.Context, tx pgx.Tx, t *contract.Table, types map[string]string, req contract.SweepRequest) (bool, error) {
	if req.SeenLive <= 0 {
		return false, nil
	}
	for _, i := range keyIndexes(t) {
		c := &t.Columns[i]
		if !exactKeyTypes[c.Type] || types[c.Name] != typeOf(c.Type).binary {
			return false, nil
		}
	}
	live, args := `(SELECT count(*) FROM `+sqlkit.QuoteTable(t)+` AS "_t" WHERE `+pgLiveWhere(t)+`)`, []any{sqlkit.QuoteTable(t), t.Key}
	if req.LiveTally == req.SeenLive {
		live, args = `$3::bigint`, append(args, req.LiveTally)
	}
	var exact bool
	var n int64
	err := tx.QueryRow(ctx, `SELECT
		NOT (SELECT relhastriggers FROM pg_class WHERE oid = to_regclass($1))
		AND (SELECT bool_and(attcollation IN (0, 100, 950, 951)) FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = ANY($2)),
		`+live, args...).Scan(&exact, &n)
	return err == nil && exact && n == req.SeenLive, err
}

// removeMissed removes (or marks) the rows of t that this pass missed
// (missedWhere: missedN rows) and the prior pass missed too, and that were
// not written since it started; it checks the share against req.MaxRatio (a refusal is
// returned, and the caller's transaction rolls back).
func (p *Sink) removeMissed(ctx context.Context, tx pgx.Tx, t *contract.Table, types map[string]string, req contract.SweepRequest, missedN int64) (contract.SweepResult, error) {
	var res contract.SweepResult
	op := "sweep " + t.String()
	if err := p.loadKeys(ctx, tx, priorTable, t, types, req.Prior); err != nil {
		return res, p.dbError(op, err)
	}
	tbl := sqlkit.QuoteTable(t)
	gone := goneWhere(t)
	args := []any{req.PriorStart.UTC()}
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM `+tbl+` AS "_t" WHERE `+pgLiveWhere(t)).Scan(&res.Live); err != nil {
		return res, p.dbError(op, err)
	}
	// After a refused sweep only the rows written before the refusals
	// count against the ratio (contract.SweepRequest.WrittenBefore).
	counted := int64(-1)
	if !req.WrittenBefore.IsZero() {
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM `+tbl+` AS "_t" WHERE `+gone+` AND `+writtenBefore(2),
			req.PriorStart.UTC(), req.WrittenBefore.UTC()).Scan(&counted); err != nil {
			return res, p.dbError(op, err)
		}
	}
	// Two passes whose misses were no picture of the source remove
	// nothing (contract.SweepRequest.PriorUntrue). The prior pass's
	// pending rows count only while the table still holds them live
	// (priorMissed: a row since removed, by a target put back or by hand,
	// was not listed again).
	var priorMissed, removable int64
	if err := tx.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE `+missedWhere(t)+` AND `+writtenBefore(1)+`) FROM `+tbl+
		` AS "_t" WHERE `+pgLiveWhere(t)+` AND `+pgSweepWhere(t, priorTable), args...).Scan(&priorMissed, &removable); err != nil {
		return res, p.dbError(op, err)
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
	q := `DELETE FROM ` + tbl + ` AS "_t" WHERE ` + gone
	if req.Mode == contract.DeletesSoft {
		q = fmt.Sprintf(`UPDATE %s AS "_t" SET %s = $2 WHERE %s`, tbl, sqlkit.QuoteIdent(contract.ColDeletedAt), gone)
		args = append(args, req.At.UTC().Truncate(time.Microsecond))
	}
	tag, err := tx.Exec(ctx, q, args...)
	if err != nil {
		return res, p.dbError(op, err)
	}
	res.Deleted = tag.RowsAffected()
	// Fewer rows than counted: a row kept in place by a trigger, rule or
	// policy is still one to remove, and the table is not the source's
	// (contract.KeptRows). Counted again only then, in this transaction.
	if res.Deleted < removable {
		var kept int64
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM `+tbl+` AS "_t" WHERE `+gone, req.PriorStart.UTC()).Scan(&kept); err != nil {
			return res, p.dbError(op, err)
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

// missedWhere is the condition of a live row of t (aliased "_t") this
// pass did not see (seenTable).
func missedWhere(t *contract.Table) string {
	return pgSweepWhere(t, seenTable) + " AND " + pgLiveWhere(t)
}

// goneWhere is the condition of a row of t that this pass and the prior
// pass missed (seenTable, priorTable) and that was not written since the
// prior pass started ($1).
func goneWhere(t *contract.Table) string {
	return missedWhere(t) + " AND " + pgSweepWhere(t, priorTable) + " AND " + writtenBefore(1)
}

// writtenBefore is the condition of a row of t (aliased "_t") last
// written before the time in parameter $arg, or never stamped.
func writtenBefore(arg int) string {
	synced := `"_t".` + sqlkit.QuoteIdent(contract.ColSyncedAt)
	return fmt.Sprintf("(%s IS NULL OR %s < $%d)", synced, synced, arg)
}

// sweepPlanner turns nested-loop joins off for the rest of the sweep's
// transaction tx (SET LOCAL: the session is as it was after it ends).
// Every statement of a sweep joins the table to key sets about its own
// size (the seen and the prior pass's keys, the parents of child rows),
// where a hash join is linear. On a table the planner has no statistics
// for yet (loaded since autovacuum last analyzed it) it underestimated
// the rows a pass missed and joined them to the prior keys by a nested
// loop scanning all of them once per row: 5 s for 100,000 rows with 1%
// gone, quadratic in the table (docs/deletions.md, "What deletions cost
// (measured)").
func sweepPlanner(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, "SET LOCAL enable_nestloop = off")
	return err
}

// loadKeys creates the temporary table name with the key columns' types
// and inserts every key of keys, seenBatch at a time, as text arrays cast
// by the server.
func (p *Sink) loadKeys(ctx context.Context, tx pgx.Tx, name string, t *contract.Table, types map[string]string, keys func(func(string) error) error) error {
	var defs, casts, params []string
	for k, name := range t.Key {
		typ := types[name]
		if typ == "" {
			typ = pgType(t.Column(name).Type)
		}
		defs = append(defs, fmt.Sprintf("k%d %s", k, typ))
		casts = append(casts, fmt.Sprintf("u.k%d::%s", k, typ))
		params = append(params, fmt.Sprintf("$%d::text[]", k+1))
	}
	if _, err := tx.Exec(ctx, fmt.Sprintf(`CREATE TEMP TABLE %s (%s) ON COMMIT DROP`, name, strings.Join(defs, ", "))); err != nil {
		return err
	}
	names := make([]string, len(t.Key))
	for k := range names {
		names[k] = fmt.Sprintf("k%d", k)
	}
	insert := fmt.Sprintf(`INSERT INTO %s SELECT %s FROM unnest(%s) AS u(%s)`, name,
		strings.Join(casts, ", "), strings.Join(params, ", "), strings.Join(names, ", "))
	cols := make([][]*string, len(t.Key))
	count := 0
	flush := func() error {
		if count == 0 {
			return nil
		}
		args := make([]any, len(cols))
		for k := range cols {
			args[k] = cols[k]
		}
		_, err := tx.Exec(ctx, insert, args...)
		for k := range cols {
			cols[k] = cols[k][:0]
		}
		count = 0
		return err
	}
	var vals []any
	err := keys(func(key string) error {
		var err error
		if vals, err = sqlkit.DecodeKey(key, vals[:0]); err != nil {
			return err
		}
		if len(vals) != len(t.Key) {
			return fmt.Errorf("recorded key has %d values for %d key columns (was target.key changed?)", len(vals), len(t.Key))
		}
		for k, v := range vals {
			s, ok := v.(string)
			if !ok {
				return fmt.Errorf("recorded key value of type %T", v)
			}
			cols[k] = append(cols[k], &s)
		}
		if count++; count == seenBatch {
			return flush()
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := flush(); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `ANALYZE `+name)
	return err
}

// pgSweepWhere returns the condition of a row of t aliased "_t" whose key
// is not in the temporary table keys (seenTable, priorTable).
func pgSweepWhere(t *contract.Table, keys string) string {
	var on []string
	for k, name := range t.Key {
		on = append(on, fmt.Sprintf(`s.k%d = "_t".%s`, k, sqlkit.QuoteIdent(name)))
	}
	return fmt.Sprintf("NOT EXISTS (SELECT 1 FROM %s AS s WHERE %s)", keys, strings.Join(on, " AND "))
}

// pgLiveWhere is the condition of a live row of t aliased "_t": not marked
// deleted (always true on a table that does not mark).
func pgLiveWhere(t *contract.Table) string {
	if t.Soft() {
		return `"_t".` + sqlkit.QuoteIdent(contract.ColDeletedAt) + " IS NULL"
	}
	return "true"
}

// LiveRows counts t's rows not marked deleted, 0 when t does not exist
// (see contract.Sink).
func (p *Sink) LiveRows(ctx context.Context, t *contract.Table) (int64, error) {
	op := "count the live rows of " + t.String()
	p.mu.Lock()
	defer p.mu.Unlock()
	conn, err := p.connect(ctx)
	if err != nil {
		return 0, err
	}
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, sqlkit.QuoteTable(t)).Scan(&exists); err != nil || !exists {
		return 0, p.nilOr(op, err)
	}
	var n int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+sqlkit.QuoteTable(t)+` AS "_t" WHERE `+pgLiveWhere(t)).Scan(&n); err != nil {
		return 0, p.dbError(op, err)
	}
	return n, nil
}
