package sqlite_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sinktest"
	"github.com/idemsync/idemsync/sink/sqlite"
)

// TestConformance runs the suite every database passes.
func TestConformance(t *testing.T) {
	sinktest.Run(t, newSQLiteBackend)
}

// newSQLiteBackend returns a fresh SQLite file in t.TempDir() as a
// sinktest.DB; the file is created by the first sink or statement.
func newSQLiteBackend(t *testing.T) *sinktest.DB {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sub", "target.db")
	b := &sinktest.DB{Name: "sqlite", UniqueFix: "CREATE UNIQUE INDEX"}
	b.Open = func(ctx context.Context) (contract.Sink, error) {
		return sqlite.OpenTarget(ctx, contract.Conn{URL: "sqlite:" + path}, nil)
	}
	var db *sql.DB
	conn := func(t *testing.T) *sql.DB {
		t.Helper()
		if db == nil {
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			var err error
			if db, err = sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)"); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
		}
		return db
	}
	b.Exec = func(t *testing.T, query string) {
		t.Helper()
		if _, err := conn(t).Exec(query); err != nil {
			t.Fatalf("exec %s: %v", query, err)
		}
	}
	b.Rows = func(t *testing.T, query string) [][]any {
		t.Helper()
		rows, err := conn(t).Query(query)
		if err != nil {
			t.Fatalf("query %s: %v", query, err)
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		var out [][]any
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			out = append(out, vals)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	b.DropOdd = func(t *testing.T, tbl *contract.Table) {
		b.Exec(t, `CREATE TRIGGER drop_odd BEFORE INSERT ON `+sinktest.QName(tbl)+` WHEN NEW.id % 2 = 1 BEGIN SELECT RAISE(IGNORE); END`)
	}
	return b
}
