package checkpoint

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
)

// Migrations numbered side by side: a file migrated by a build that knew
// 1 and 3 gets 2 from a build that knows all three, although its
// user_version is already 3; a build that does not know an applied
// migration refuses the file as newer.
func TestMigrationGapFilledLater(t *testing.T) {
	ctx := context.Background()
	s, db := unmigratedStore(t)
	one := migration{version: 1, name: "0001_a.sql", sql: "CREATE TABLE a (x INTEGER) STRICT"}
	two := migration{version: 2, name: "0002_b.sql", sql: "CREATE TABLE b (x INTEGER) STRICT"}
	three := migration{version: 3, name: "0003_c.sql", sql: "CREATE TABLE c (x INTEGER) STRICT"}
	tables := func() map[string]bool {
		t.Helper()
		rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table'`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]bool{}
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				t.Fatal(err)
			}
			out[n] = true
		}
		return out
	}
	version := func() int {
		t.Helper()
		v, err := schemaVersion(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}

	if err := s.migrateTo(ctx, []migration{one, three}); err != nil {
		t.Fatal(err)
	}
	if got := tables(); !got["a"] || got["b"] || !got["c"] || version() != 3 {
		t.Fatalf("after 1 and 3: tables %v, user_version %d", got, version())
	}
	if err := s.migrateTo(ctx, []migration{one, two, three}); err != nil {
		t.Fatalf("migrate with 2 added: %v", err)
	}
	if got := tables(); !got["b"] || version() != 3 {
		t.Errorf("migration 2 not applied to a file at version 3: tables %v, user_version %d", got, version())
	}
	if err := s.migrateTo(ctx, []migration{one, two, three}); err != nil {
		t.Errorf("a second migrate is not a no-op: %v", err)
	}
	if err := s.migrateTo(ctx, []migration{one, three}); !errors.Is(err, errNewer) {
		t.Errorf("a build without migration 2 accepted the file: %v", err)
	}
}

// A file migrated before applied migrations were recorded (numbers without
// gaps, user_version the count) is read as having every number up to its
// user_version, and gets the later ones.
func TestMigrationFromUnrecordedFile(t *testing.T) {
	ctx := context.Background()
	s, db := unmigratedStore(t)
	for _, q := range []string{"CREATE TABLE a (x INTEGER) STRICT", "CREATE TABLE b (x INTEGER) STRICT", "PRAGMA user_version = 2"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	ms := []migration{
		{version: 1, name: "0001_a.sql", sql: "CREATE TABLE a (x INTEGER) STRICT"},
		{version: 2, name: "0002_b.sql", sql: "CREATE TABLE b (x INTEGER) STRICT"},
		{version: 4, name: "0004_d.sql", sql: "CREATE TABLE d (x INTEGER) STRICT"},
	}
	if err := s.migrateTo(ctx, ms); err != nil {
		t.Fatalf("migrate: %v (1 and 2 were taken as applied again?)", err)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil || n != 3 {
		t.Errorf("schema_migrations holds %d rows, want 3 (%v)", n, err)
	}
}

// A run that opened the state file and then waited for its job's lock
// (--if-running wait) takes the lock after another process may have run:
// a newer idemsync that migrated the file meanwhile may have written the
// job's state in a form this build would misread. Lock reads the file's
// schema again once it holds the lock and refuses the file as newer, the
// lock released (docs/operations.md, "The state file").
func TestLockRefusesAFileMigratedWhileWaiting(t *testing.T) {
	ctx := context.Background()
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	latest := latestVersion(ms)
	for name, newer := range map[string]string{
		"higher version":    fmt.Sprintf("PRAGMA user_version = %d; INSERT INTO schema_migrations VALUES (%d, 'later')", latest+1, latest+1),
		"unknown migration": "INSERT INTO schema_migrations VALUES (17, 'later')",
	} {
		t.Run(name, func(t *testing.T) {
			path := statePath(t)
			waiting := openAt(t, path)
			db, err := sql.Open(driverName, path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.ExecContext(ctx, newer); err != nil {
				t.Fatal(err)
			}
			unlock, err := waiting.Lock(ctx, "orders")
			if err == nil {
				unlock()
				t.Fatal("Lock took the job of a state file a newer idemsync migrated after this store opened it")
			}
			if !errors.Is(err, errNewer) || !strings.Contains(err.Error(), "newer idemsync") {
				t.Fatalf("Lock: %v, want the file refused as written by a newer idemsync", err)
			}
			var ce *contract.Error
			if !errors.As(err, &ce) || ce.Class != contract.Permanent || !strings.Contains(ce.Hint, "upgrade") {
				t.Errorf("Lock: %#v, want a permanent error whose hint says to upgrade", err)
			}
			// The refused Lock holds nothing: the job's lock is free.
			if held, err := waiting.osHeld("orders"); err != nil || held {
				t.Errorf("job lock held after the refusal (%v, %v)", held, err)
			}
		})
	}
}
