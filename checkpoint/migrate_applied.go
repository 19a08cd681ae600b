package checkpoint

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
)

// querier is what reading the schema needs: a *sql.DB or a *sql.Tx.
type querier interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}

// appliedMigrations returns the numbers of the migrations applied to the
// file and whether the file records them (table schema_migrations). A file
// without the table was migrated by a build whose numbers ran without
// gaps: every known number up to its user_version v is applied. Recording
// each number lets migrations be numbered side by side: a build that adds
// 0004 after another added 0005 still applies 0004 to a file already at 5.
func appliedMigrations(ctx context.Context, q querier, v int, ms []migration) (map[int]bool, bool, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`).Scan(&n)
	if err != nil {
		return nil, false, fmt.Errorf("read applied migrations: %w", err)
	}
	applied, err := readApplied(ctx, q, v, n > 0, ms)
	return applied, n > 0, err
}

// readApplied is appliedMigrations once it is known whether the file
// records them.
func readApplied(ctx context.Context, q querier, v int, recorded bool, ms []migration) (map[int]bool, error) {
	applied := map[int]bool{}
	if !recorded {
		for _, m := range ms {
			if m.version <= v {
				applied[m.version] = true
			}
		}
		return applied, nil
	}
	rows, err := q.QueryContext(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return nil, fmt.Errorf("read applied migrations: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var ver int
		if err := rows.Scan(&ver); err != nil {
			return nil, fmt.Errorf("read applied migrations: %w", err)
		}
		applied[ver] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read applied migrations: %w", err)
	}
	return applied, nil
}

// notNewer returns errNewer when the file's schema version is above every
// migration of ms or a migration this build does not know was applied.
func notNewer(v int, applied map[int]bool, ms []migration) error {
	if latest := latestVersion(ms); v > latest {
		return fmt.Errorf("%w: schema version %d, this idemsync knows %d", errNewer, v, latest)
	}
	known := map[int]bool{}
	for _, m := range ms {
		known[m.version] = true
	}
	var unknown []int
	for ver := range applied {
		if !known[ver] {
			unknown = append(unknown, ver)
		}
	}
	if len(unknown) > 0 {
		sort.Ints(unknown)
		return fmt.Errorf("%w: migration %d applied, which this idemsync does not know", errNewer, unknown[0])
	}
	return nil
}

// pending returns the migrations of ms not applied yet, in order.
func pending(applied map[int]bool, ms []migration) []migration {
	var out []migration
	for _, m := range ms {
		if !applied[m.version] {
			out = append(out, m)
		}
	}
	return out
}

// recordMigrations creates schema_migrations when missing and records
// every applied number in it.
func recordMigrations(ctx context.Context, tx *sql.Tx, applied map[int]bool, now string) error {
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		applied_at TEXT NOT NULL
	) STRICT`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	for ver := range applied {
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO schema_migrations (version, applied_at) VALUES (?, ?)`, ver, now); err != nil {
			return fmt.Errorf("record migration %d: %w", ver, err)
		}
	}
	return nil
}
