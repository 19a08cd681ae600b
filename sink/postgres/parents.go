package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
	"github.com/jackc/pgx/v5"
)

var _ contract.ParentReader = (*Sink)(nil)

// ParentRows implements contract.ParentReader: cols of the rows of t that f
// keeps (not those marked deleted, whatever t.Deletes says now), by key, each value as its JSON form's text (to_json: timestamps
// in ISO 8601, numbers as the server writes them). Key bounds are sent as
// text and cast to the key columns' types as the server has them, so a
// parent whose columns are inferred is bounded like any other.
func (p *Sink) ParentRows(ctx context.Context, t *contract.Table, cols []string, f contract.ParentFilter) ([][]*string, error) {
	op := "read parent rows of " + t.String()
	p.mu.Lock()
	defer p.mu.Unlock()
	var out [][]*string
	err := p.inTx(ctx, op, rollbackTx, func(tx pgx.Tx) (err error) {
		out, err = p.parentRows(ctx, tx, op, t, cols, f)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// parentRows is ParentRows in its transaction tx, which only reads.
func (p *Sink) parentRows(ctx context.Context, tx pgx.Tx, op string, t *contract.Table, cols []string, f contract.ParentFilter) ([][]*string, error) {
	// The values are rendered in fixed settings, not the session's: a
	// host whose connection said PGTZ=Asia/Kolkata or extra_float_digits
	// 0 read another text for the same parent, so requested other URLs
	// and stored its children a second time under it (docs/job-file.md,
	// "Parent → child fan-out").
	if _, err := tx.Exec(ctx, parentTextSettings); err != nil {
		return nil, p.dbError(op, err)
	}
	delete(p.types, sqlkit.QuoteTable(t)) // the parent's run may have added columns since
	types, err := p.columnTypes(ctx, tx, t)
	if err != nil {
		return nil, p.dbError(op, err)
	}
	if len(types) == 0 {
		return nil, sqlkit.MissingTable(t)
	}
	for _, c := range cols {
		if _, ok := types[c]; !ok {
			return nil, contract.Errorf(contract.Permanent, "%s: the table has no column %s", op, c)
		}
	}
	_, marks := types[contract.ColDeletedAt]
	q, args, err := sqlkit.ParentQuery(pgDialect, t, cols, f, marks, f.Since.UTC(), func(i int, v any, param string) (string, any, error) {
		text := sqlkit.ToText(v)
		if tm, ok := v.(time.Time); ok {
			text = tm.UTC().Format(time.RFC3339Nano)
		}
		return param + "::text::" + types[t.Key[i]], text, nil
	})
	if err != nil {
		return nil, err
	}
	rows, err := tx.Query(ctx, q, args...)
	if err != nil {
		return nil, p.dbError(op, err)
	}
	defer rows.Close()
	var out [][]*string
	for rows.Next() {
		vals, err := sqlkit.ScanText(len(cols), rows.Scan)
		if err != nil {
			return nil, p.dbError(op, err)
		}
		out = append(out, vals)
	}
	if err := rows.Err(); err != nil {
		return nil, p.dbError(op, err)
	}
	return out, nil
}

// parentTextSettings fix, for ParentRows' transaction, what renders a
// value as text: those of a UTC session with the defaults, so the texts
// are those such a session read before.
const parentTextSettings = `SELECT set_config('TimeZone', 'UTC', true), set_config('DateStyle', 'ISO, MDY', true),
	set_config('IntervalStyle', 'postgres', true), set_config('extra_float_digits', '1', true), set_config('bytea_output', 'hex', true)`

// pgDialect is how PostgreSQL writes what sqlkit.Dialect names: numbered
// parameters, values as their JSON form's text, timestamps compared as
// timestamps.
var pgDialect = sqlkit.Dialect{
	Param:     func(n int) string { return fmt.Sprintf("$%d", n) },
	AsText:    func(col string) string { return "to_json(" + col + ") #>> '{}'" },
	AtOrAfter: func(col, param string) string { return col + " >= " + param },
}

// parentsTable is the temporary table MissingParents loads the keys into
// (ON COMMIT DROP; its transaction rolls back, which drops it too).
const parentsTable = `"_idemsync_parents"`

// MissingParents implements contract.ParentReader: the keys go into a
// temporary table with the key columns' types (as a sweep loads its
// keys), and the first with no row of t, marked or not, is named.
func (p *Sink) MissingParents(ctx context.Context, t *contract.Table, keys func(func(string) error) error) (string, error) {
	op := "look for missing parents in " + t.String()
	p.mu.Lock()
	defer p.mu.Unlock()
	var missing string
	err := p.inTx(ctx, op, rollbackTx, func(tx pgx.Tx) error {
		delete(p.types, sqlkit.QuoteTable(t)) // the table may have been replaced since
		types, err := p.columnTypes(ctx, tx, t)
		if err != nil {
			return p.dbError(op, err)
		}
		if len(types) == 0 {
			return sqlkit.MissingTable(t)
		}
		var on, cols []string
		for k, name := range t.Key {
			if types[name] == "" {
				return contract.Errorf(contract.Permanent, "%s: the table has no key column %s", op, name)
			}
			on = append(on, fmt.Sprintf(`"_t".%s = s.k%d`, sqlkit.QuoteIdent(name), k))
			cols = append(cols, fmt.Sprintf("s.k%d::text", k))
		}
		if err := p.loadKeys(ctx, tx, parentsTable, t, types, keys); err != nil {
			return p.dbError(op, err)
		}
		q := fmt.Sprintf(`SELECT %s FROM %s AS s WHERE NOT EXISTS (SELECT 1 FROM %s AS "_t" WHERE %s) LIMIT 1`,
			strings.Join(cols, ", "), parentsTable, sqlkit.QuoteTable(t), strings.Join(on, " AND "))
		vals, err := sqlkit.ScanText(len(t.Key), tx.QueryRow(ctx, q).Scan)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return nil
		case err != nil:
			return p.dbError(op, err)
		}
		missing = sqlkit.KeyDesc(t, vals)
		return nil
	})
	if err != nil {
		return "", err
	}
	return missing, nil
}
