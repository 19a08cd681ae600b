package checkpoint

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// probe is what opening a state file needs to know before it touches the
// file, read in one statement: every idemsync process opens the state,
// and each statement is a parse and a step of its own (docs/ledger.md,
// "Speed"). One statement also means that another process creating the
// same new file cannot commit its schema between two of the readings.
type probe struct {
	appID    int64
	version  int    // PRAGMA user_version
	journal  string // PRAGMA journal_mode
	tables   int    // tables and indexes not SQLite's own
	recorded bool   // schema_migrations exists
}

func readProbe(ctx context.Context, db *sql.DB) (probe, error) {
	var p probe
	err := db.QueryRowContext(ctx, `SELECT
		(SELECT application_id FROM pragma_application_id),
		(SELECT user_version FROM pragma_user_version),
		(SELECT journal_mode FROM pragma_journal_mode),
		(SELECT count(*) FROM sqlite_schema WHERE name NOT LIKE 'sqlite\_%' ESCAPE '\'),
		(SELECT count(*) > 0 FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations')`).
		Scan(&p.appID, &p.version, &p.journal, &p.tables, &p.recorded)
	if err != nil {
		return p, fmt.Errorf("read application id: %w", err)
	}
	return p, nil
}

// wal reports whether the file is in WAL mode already.
func (p probe) wal() bool { return strings.EqualFold(p.journal, "wal") }
