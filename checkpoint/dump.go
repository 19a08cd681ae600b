package checkpoint

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/idemsync/idemsync/checkpoint/statedump"
)

var _ statedump.Porter = (*Store)(nil)

// Export reads the whole state file in one read transaction as a dump
// (docs/operations.md, "Moving a job between hosts"); the refresh tokens
// only with tokens.
func (s *Store) Export(ctx context.Context, tokens bool) (*statedump.Dump, error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, s.wrap("export", err)
	}
	defer tx.Rollback() //nolint:errcheck // read only
	d := &statedump.Dump{Format: statedump.Format, Tokens: tokens, Tables: map[string][]statedump.Row{}}
	for _, t := range statedump.Tables {
		if t.Secret && !tokens {
			continue
		}
		rows, err := exportTable(ctx, tx, t)
		if err != nil {
			return nil, s.wrap("export "+t.Name, err)
		}
		d.Tables[t.Name] = rows
	}
	return d, nil
}

func exportTable(ctx context.Context, tx *sql.Tx, t statedump.Table) ([]statedump.Row, error) {
	names := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		names[i] = c.SQLiteName()
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+strings.Join(names, ", ")+` FROM `+t.Name+` ORDER BY `+t.Key)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []statedump.Row{}
	for rows.Next() {
		vals := make([]any, len(names))
		ptrs := make([]any, len(names))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
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

// Import loads d into this state file in one transaction; it refuses a
// file that holds a job already.
func (s *Store) Import(ctx context.Context, d *statedump.Dump) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM jobs`).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return errors.New("the state file already holds jobs: import only into a new state")
		}
		for _, t := range statedump.Tables {
			if err := importTable(ctx, tx, t, d.Tables[t.Name]); err != nil {
				return fmt.Errorf("%s: %w", t.Name, err)
			}
		}
		return nil
	})
	if err != nil {
		return s.wrap("import", err)
	}
	return nil
}

func importTable(ctx context.Context, tx *sql.Tx, t statedump.Table, rows []statedump.Row) error {
	names := make([]string, len(t.Columns))
	marks := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		names[i], marks[i] = c.SQLiteName(), "?"
	}
	q := `INSERT INTO ` + t.Name + ` (` + strings.Join(names, ", ") + `) VALUES (` + strings.Join(marks, ", ") + `)`
	for i, r := range rows {
		args, err := statedump.Values(t, r)
		if err != nil {
			return fmt.Errorf("row %d, %w", i+1, err)
		}
		for j, c := range t.Columns {
			v := args[j]
			switch x := v.(type) {
			case time.Time:
				v = formatTime(x)
			case bool:
				v = 0
				if x {
					v = 1
				}
			case []byte:
				if c.SQLiteText {
					v = string(x)
				}
			case nil:
				if c.SQLiteText {
					v = ""
				}
			}
			args[j] = v
		}
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("row %d: %w", i+1, err)
		}
	}
	return nil
}
