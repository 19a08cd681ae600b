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

var _ contract.Sweeper = (*Sink)(nil)

// seenTable is the temporary table a sweep loads the seen keys into,
// dropped when its transaction ends.
const seenTable = `"_idemsync_seen"`

// seenBatch is how many keys one insert into seenTable sends, at most.
const seenBatch = 10000

// KeyForms returns each row's key as PostgreSQL's text input of each key
// column (pgText), encoded with sqlkit.EncodeKey; Sweep casts them to the
// key columns' types, so keys the table holds equal match (see
// contract.Sweeper).
func (p *Sink) KeyForms(_ context.Context, t *contract.Table, rows []contract.Row) ([]string, error) {
	idx := keyIndexes(t)
	out := make([]string, len(rows))
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
		if out[ri], err = sqlkit.EncodeKey(key); err != nil {
			return nil, contract.Errorf(contract.Permanent, "keys of %s: %w", t, err)
		}
	}
	return out, nil
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

// Sweep deletes (hard) or marks (soft) the rows of t whose key is not
// among req.Keys, in one transaction (see contract.Sweeper): the keys go
// into a temporary table with the key columns' types (ON COMMIT DROP),
// the rows with no match are removed, and the transaction rolls back when
// they exceed req.MaxRatio of the live rows. Errors are *contract.Error as
// for Upsert, or wrap the error of req.Keys.
func (p *Sink) Sweep(ctx context.Context, t *contract.Table, req contract.SweepRequest) (contract.SweepResult, error) {
	var res contract.SweepResult
	op := "sweep " + t.String()
	p.mu.Lock()
	defer p.mu.Unlock()
	conn, err := p.connect(ctx)
	if err != nil {
		return res, err
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return res, p.dbError(op, err)
	}
	defer func() {
		rctx, cancel := rollbackContext(ctx)
		defer cancel()
		_ = tx.Rollback(rctx)
	}()
	types, err := p.columnTypes(ctx, tx, t)
	if err != nil {
		return res, p.dbError(op, err)
	}
	if err := p.loadSeen(ctx, tx, t, types, req.Keys); err != nil {
		return res, p.dbError(op, err)
	}
	failpoint.Hit("sweep-loaded")
	gone, live := pgSweepWhere(t)
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM `+sqlkit.QuoteTable(t)+` AS "_t" WHERE `+live).Scan(&res.Live); err != nil {
		return res, p.dbError(op, err)
	}
	// After a refused sweep only the rows written before the refusals
	// count against the ratio (contract.SweepRequest.WrittenBefore).
	counted := int64(-1)
	if !req.WrittenBefore.IsZero() {
		synced := sqlkit.QuoteIdent(contract.ColSyncedAt)
		if err := tx.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %s AS "_t" WHERE %s AND %s AND (%s IS NULL OR %s < $1)`,
			sqlkit.QuoteTable(t), live, gone, synced, synced), req.WrittenBefore.UTC()).Scan(&counted); err != nil {
			return res, p.dbError(op, err)
		}
	}
	// Remove first, then check the share: a refusal rolls back, and the
	// common case (nothing or little to remove) costs one pass, not two.
	q := `DELETE FROM ` + sqlkit.QuoteTable(t) + ` AS "_t" WHERE ` + gone
	var args []any
	if req.Mode == contract.DeletesSoft {
		q = fmt.Sprintf(`UPDATE %s AS "_t" SET %s = $1 WHERE %s AND %s`, sqlkit.QuoteTable(t), sqlkit.QuoteIdent(contract.ColDeletedAt), live, gone)
		args = append(args, req.At.UTC().Truncate(time.Microsecond))
	}
	tag, err := tx.Exec(ctx, q, args...)
	if err != nil {
		return res, p.dbError(op, err)
	}
	res.Deleted = tag.RowsAffected()
	res.Base = req.Base(res.Live)
	if counted < 0 {
		counted = res.Deleted
	}
	if err := contract.CheckSweepRatio(t, counted, res.Live, req); err != nil {
		return contract.SweepResult{}, err
	}
	failpoint.Hit("sweep-applied")
	if err := tx.Commit(ctx); err != nil {
		return contract.SweepResult{}, p.dbError(op, err)
	}
	return res, nil
}

// loadSeen creates seenTable with the key columns' types and inserts every
// key of keys, seenBatch at a time, as text arrays cast by the server.
func (p *Sink) loadSeen(ctx context.Context, tx pgx.Tx, t *contract.Table, types map[string]string, keys func(func(string) error) error) error {
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
	if _, err := tx.Exec(ctx, fmt.Sprintf(`CREATE TEMP TABLE %s (%s) ON COMMIT DROP`, seenTable, strings.Join(defs, ", "))); err != nil {
		return err
	}
	names := make([]string, len(t.Key))
	for k := range names {
		names[k] = fmt.Sprintf("k%d", k)
	}
	insert := fmt.Sprintf(`INSERT INTO %s SELECT %s FROM unnest(%s) AS u(%s)`, seenTable,
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
	_, err = tx.Exec(ctx, `ANALYZE `+seenTable)
	return err
}

// pgSweepWhere returns the conditions of a sweep over t aliased "_t": gone
// (the row's key is not in seenTable) and live (the row is not marked
// deleted; always true on a table that does not mark).
func pgSweepWhere(t *contract.Table) (gone, live string) {
	var on []string
	for k, name := range t.Key {
		on = append(on, fmt.Sprintf(`s.k%d = "_t".%s`, k, sqlkit.QuoteIdent(name)))
	}
	gone = fmt.Sprintf("NOT EXISTS (SELECT 1 FROM %s AS s WHERE %s)", seenTable, strings.Join(on, " AND "))
	live = "true"
	if t.Soft() {
		live = `"_t".` + sqlkit.QuoteIdent(contract.ColDeletedAt) + " IS NULL"
	}
	return gone, live
}

// LiveRows counts t's rows not marked deleted, 0 when t does not exist
// (see contract.Sweeper).
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
	_, live := pgSweepWhere(t)
	var n int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+sqlkit.QuoteTable(t)+` AS "_t" WHERE `+live).Scan(&n); err != nil {
		return 0, p.dbError(op, err)
	}
	return n, nil
}
