package pgstate

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/idemsync/idemsync/checkpoint/statedump"
	"github.com/jackc/pgx/v5"
)

var _ statedump.Porter = (*Store)(nil)

// Export reads the whole state in one repeatable-read snapshot as a dump
// (docs/operations.md, "Moving a job between hosts"); the refresh tokens
// only with tokens.
func (s *Store) Export(ctx context.Context, tokens bool) (*statedump.Dump, error) {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, s.wrap("export", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // read only
	d := &statedump.Dump{Format: statedump.Format, Tokens: tokens, Tables: map[string][]statedump.Row{}}
	for _, t := range statedump.Tables {
		if t.Secret && !tokens {
			continue
		}
		rows, err := s.exportTable(ctx, tx, t)
		if err != nil {
			return nil, s.wrap("export "+t.Name, err)
		}
		d.Tables[t.Name] = rows
	}
	return d, nil
}

func (s *Store) exportTable(ctx context.Context, tx pgx.Tx, t statedump.Table) ([]statedump.Row, error) {
	names := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		names[i] = c.Name
	}
	rows, err := tx.Query(ctx, s.q(`SELECT `+strings.Join(names, ", ")+` FROM {S}.`+t.Name+` ORDER BY `+t.Key))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []statedump.Row{}
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return nil, err
		}
		r, err := statedump.RowOf(t, vals)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Import loads d into this state in one transaction, refusing a state
// that holds a job; the runs', dead letters' and schema changes' ids go on after the
// highest imported.
func (s *Store) Import(ctx context.Context, d *statedump.Dump) error {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var n int
		if err := tx.QueryRow(ctx, s.q(`SELECT count(*) FROM {S}.jobs`)).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return errors.New("the state already holds jobs: import only into a new state")
		}
		for _, t := range statedump.Tables {
			if err := s.importTable(ctx, tx, t, d.Tables[t.Name]); err != nil {
				return fmt.Errorf("%s: %w", t.Name, err)
			}
		}
		for _, t := range []string{"runs", "dead_letters", "schema_changes"} {
			if _, err := tx.Exec(ctx, s.q(`SELECT setval(pg_get_serial_sequence($1, 'id'), coalesce(max(id), 0) + 1, false) FROM {S}.`+t),
				s.schema+"."+t); err != nil {
				return fmt.Errorf("%s: move the ids on: %w", t, err)
			}
		}
		return nil
	})
	if err != nil {
		return s.wrap("import", err)
	}
	return nil
}

func (s *Store) importTable(ctx context.Context, tx pgx.Tx, t statedump.Table, rows []statedump.Row) error {
	names := make([]string, len(t.Columns))
	marks := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		names[i], marks[i] = c.Name, "$"+strconv.Itoa(i+1)
	}
	override := ""
	if t.Name == "runs" || t.Name == "dead_letters" || t.Name == "schema_changes" {
		override = " OVERRIDING SYSTEM VALUE"
	}
	q := s.q(`INSERT INTO {S}.` + t.Name + ` (` + strings.Join(names, ", ") + `)` + override + ` VALUES (` + strings.Join(marks, ", ") + `)`)
	for i, r := range rows {
		args, err := statedump.Values(t, r)
		if err != nil {
			return fmt.Errorf("row %d, %w", i+1, err)
		}
		if _, err := tx.Exec(ctx, q, args...); err != nil {
			return fmt.Errorf("row %d: %w", i+1, err)
		}
	}
	return nil
}
