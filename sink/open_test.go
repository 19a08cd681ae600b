package sink_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/sink"
	idsync "github.com/idemsync/idemsync/sync"
)

func TestRedactURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://app:s3cret@db:5432/orders?sslmode=disable", "postgres://app:xxxxx@db:5432/orders?sslmode=disable"},
		{"postgresql://app@db/orders", "postgresql://app@db/orders"},
		{"postgres://db/orders?user=app&password=s3cret&sslmode=require", "postgres://db/orders?user=app&password=xxxxx&sslmode=require"},
		{"postgres://app:p%40ss%2Fw@db/x", "postgres://app:xxxxx@db/x"},
		{"postgres://app:pa/ss@db/x", "postgres://app:xxxxx@db/x"}, // unescaped / breaks url.Parse
		{"postgres://app:pa#ss@db/x", "postgres://app:xxxxx@db/x"}, // unescaped #
		{"host=db user=app password=s3cret dbname=x", "host=db user=app password=xxxxx dbname=x"},
		{"host=db password='it''s secret' dbname=x", "host=db password=xxxxx dbname=x"},
		{"host=db PASSWORD = s3cret", "host=db PASSWORD = xxxxx"},
		{"host=db sslpassword=s3cret", "host=db sslpassword=xxxxx"},
		{"sqlite:out/orders.db", "sqlite:out/orders.db"},
		{"sqlite:///abs/orders.db", "sqlite:///abs/orders.db"},
	} {
		got := sink.RedactURL(tc.in)
		if got != tc.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
		for _, secret := range []string{"s3cret", "pa/ss", "pa#ss", "p%40ss"} {
			if strings.Contains(got, secret) {
				t.Errorf("RedactURL(%q) = %q leaks %q", tc.in, got, secret)
			}
		}
	}
}

// FuzzRedactURL checks that a password set through url.UserPassword never
// survives redaction.
func FuzzRedactURL(f *testing.F) {
	for _, s := range []string{"s3cret", "p@ss", "a/b", "x:y", "%41", "🙂"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, pw string) {
		if len(pw) < 6 {
			return // short passwords match unrelated text by chance
		}
		raw := (&url.URL{Scheme: "postgres", User: url.UserPassword("app", pw), Host: "db:5432", Path: "/orders"}).String()
		got := sink.RedactURL(raw)
		u, err := url.Parse(got)
		if err != nil {
			t.Fatalf("RedactURL(%q) = %q: %v", raw, got, err)
		}
		if p, _ := u.User.Password(); p != "xxxxx" || strings.Contains(got, url.UserPassword("app", pw).String()) {
			t.Fatalf("RedactURL(%q) = %q", raw, got)
		}
	})
}

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
		tbl := &idsync.Table{Name: "t", Key: []string{"id"}, Columns: []idsync.Column{{Name: "id", Type: idsync.TypeText}}, Create: true}
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
		s2, err := sink.OpenSQLite(ctx, tc.file, nil)
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
		_, err := sink.Open(context.Background(), raw, nil)
		if code := idsync.ExitCode(err); code != idsync.ExitUsage {
			t.Errorf("open %q: exit %d (%v), want %d", raw, code, err, idsync.ExitUsage)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("open %q: password in %v", raw, err)
		}
	}
}
