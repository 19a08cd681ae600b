package checkpoint

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// ApplicationID is the SQLite application_id of an idemsync state file
// ("idsy" in ASCII). A SQLite file with another non-zero application_id is
// someone else's database and is never touched.
const ApplicationID = 0x69647379

// errNewer marks a state file written by a newer idemsync.
var errNewer = errors.New("state file written by a newer idemsync")

//go:embed migrations/*.sql
var migrationFS embed.FS

// migration is one numbered schema step, migrations/NNNN_name.sql.
type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations returns the embedded migrations in order. Their numbers
// are unique and increasing; a gap is allowed (numbers are handed out to
// changes made side by side), and user_version is the highest number
// applied: every migration above it is applied, in order.
func loadMigrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	var ms []migration
	for _, e := range entries {
		name := e.Name()
		num, _, ok := strings.Cut(name, "_")
		if !ok || !strings.HasSuffix(name, ".sql") {
			return nil, fmt.Errorf("migration %s: name is not NNNN_name.sql", name)
		}
		v, err := strconv.Atoi(num)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: bad number", name)
		}
		body, err := fs.ReadFile(migrationFS, path.Join("migrations", name))
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", name, err)
		}
		ms = append(ms, migration{version: v, name: name, sql: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i := 1; i < len(ms); i++ {
		if ms[i].version == ms[i-1].version {
			return nil, fmt.Errorf("migrations %s and %s share a number", ms[i-1].name, ms[i].name)
		}
	}
	return ms, nil
}

// latestVersion is the highest migration number, 0 when there is none.
func latestVersion(ms []migration) int {
	if len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].version
}

// schemaVersion returns the file's PRAGMA user_version.
func schemaVersion(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int, error) {
	var v int
	if err := q.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

// notNewerNow reads the file's schema version and applied migrations
// again and returns errNewer when a newer idemsync migrated the file
// since this store opened it (Lock, after a wait for another run).
func (s *Store) notNewerNow(ctx context.Context) error {
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	v, err := schemaVersion(ctx, s.db)
	if err != nil {
		return err
	}
	applied, _, err := appliedMigrations(ctx, s.db, v, ms)
	if err != nil {
		return err
	}
	return notNewer(v, applied, ms)
}

// migrateTo applies the migrations of ms the file lacks, in order, records
// them in schema_migrations and sets user_version to the highest number.
func (s *Store) migrateTo(ctx context.Context, ms []migration) error {
	latest := latestVersion(ms)
	v, err := schemaVersion(ctx, s.db)
	if err != nil {
		return err
	}
	applied, recorded, err := appliedMigrations(ctx, s.db, v, ms)
	if err != nil {
		return err
	}
	if err := notNewer(v, applied, ms); err != nil {
		return err
	}
	if v == latest && len(pending(applied, ms)) == 0 && (recorded || v == 0) {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin migration: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit
	if v, err = schemaVersion(ctx, tx); err != nil {
		return err
	}
	if applied, _, err = appliedMigrations(ctx, tx, v, ms); err != nil {
		return err
	}
	if err := notNewer(v, applied, ms); err != nil {
		return err
	}
	todo := pending(applied, ms)
	for _, m := range todo {
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			return fmt.Errorf("apply migration %s: %w", m.name, err)
		}
		applied[m.version] = true
	}
	if err := recordMigrations(ctx, tx, applied, s.stamp()); err != nil {
		return err
	}
	// PRAGMA arguments cannot be bound; both values are our own integers.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d", ApplicationID)); err != nil {
		return fmt.Errorf("set application id: %w", err)
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", latest)); err != nil {
		return fmt.Errorf("set schema version: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit migration: %w", err)
	}
	if len(todo) > 0 {
		s.log.Info("state file schema migrated", "path", s.path, "from", v, "to", latest)
	}
	return nil
}
