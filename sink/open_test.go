package sink_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink"
	"github.com/idemsync/idemsync/sink/sqlite"
)

func TestOpenSQLiteForms(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	t.Chdir(dir)
	for _, tc := range []struct{ url, file string }{
		{"sqlite:rel/a.db", filepath.Join(dir, "rel", "a.db")},
		{"sqlite://rel2/b.db", filepath.Join(dir, "rel2", "b.db")},
		{"sqlite://" + filepath.Join(dir, "abs", "c.db"), filepath.Join(dir, "abs", "c.db")},
		{"sqlite:" + filepath.Join(dir, "odd dir?#%", "d.db"), filepath.Join(dir, "odd dir?#%", "d.db")},
		{"sqlite::memory:", ""},
	} {
		s, err := sink.Open(ctx, tc.url, nil)
		if err != nil {
			t.Fatalf("open %s: %v", tc.url, err)
		}
		tbl := &contract.Table{Name: "t", Key: []string{"id"}, Columns: []contract.Column{{Name: "id", Type: contract.TypeText}}, Create: true}
		if err := s.Prepare(ctx, tbl); err != nil {
			t.Fatalf("prepare in %s: %v", tc.url, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if tc.file == "" {
			continue
		}
		if _, err := os.Stat(tc.file); err != nil {
			t.Errorf("open %s: %v", tc.url, err)
		}
		if fi, err := os.Stat(filepath.Dir(tc.file)); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("open %s: parent dir mode %v, %v; want 0700", tc.url, fi.Mode().Perm(), err)
		}
		var mode string
		s2, err := sqlite.Open(ctx, tc.file, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := s2.DB().QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
			t.Errorf("journal_mode = %q, %v; want wal", mode, err)
		}
		s2.Close()
	}
}

func TestOpenErrors(t *testing.T) {
	for _, raw := range []string{"mysql://u:s3cret@db/x", "sqlite:", "sqlite://", "", "orders.db"} {
		s, err := sink.Open(context.Background(), raw, nil)
		if s != nil {
			t.Errorf("open %q: sink %#v with error %v, want nil", raw, s, err)
		}
		if code := contract.ClassOf(err); code != contract.Invalid {
			t.Errorf("open %q: exit %d (%v), want %d", raw, code, err, contract.Invalid)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("open %q: password in %v", raw, err)
		}
	}
}

// An unknown scheme is refused with a hint naming every database's URL
// form, and with the password hidden.
func TestLookupUnknownScheme(t *testing.T) {
	_, err := sink.Lookup("mysql://app:s3cret@db/x")
	if code := contract.ClassOf(err); code != contract.Invalid {
		t.Fatalf("exit %d (%v), want %d", code, err, contract.Invalid)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("password in %v", err)
	}
	if hint := contract.Hint(err); hint != "use sqlite:PATH or postgres://user:password@host:5432/database" {
		t.Errorf("hint %q", hint)
	}
	for _, raw := range []string{"sqlite:x.db", "SQLite:x.db", "postgres://db/x", "POSTGRESQL://db/x"} {
		if _, err := sink.Lookup(raw); err != nil {
			t.Errorf("lookup %q: %v", raw, err)
		}
	}
}
