package checkpoint

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
)

func TestOpenCreatesPrivateFile(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("file modes are a Unix notion")
	}
	dir := filepath.Join(t.TempDir(), "a", "b")
	path := filepath.Join(dir, "state.db")
	s := openAt(t, path)
	startRun(t, s, contract.RunInfo{Job: "orders"}) // creates -wal and -shm

	for _, c := range []struct {
		path string
		mode os.FileMode
	}{
		{filepath.Dir(dir), 0o700},
		{dir, 0o700},
		{path, 0o600},
		{path + "-wal", 0o600},
		{path + "-shm", 0o600},
	} {
		st, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != c.mode {
			t.Errorf("%s: mode %v, want %v", c.path, got, c.mode)
		}
	}
}

func TestOpenReopenIsIdempotent(t *testing.T) {
	ctx := context.Background()
	path := statePath(t)
	s, err := Open(ctx, path, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	id := startRun(t, s, contract.RunInfo{Job: "orders", Checkpoint: "p1"})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		s := openAt(t, path)
		var version, appID int
		var mode string
		if err := s.db.QueryRow("PRAGMA user_version").Scan(&version); err != nil {
			t.Fatal(err)
		}
		if err := s.db.QueryRow("PRAGMA application_id").Scan(&appID); err != nil {
			t.Fatal(err)
		}
		if err := s.db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if version != latestVersion(ms) || appID != ApplicationID || mode != "wal" {
			t.Errorf("open %d: user_version %d application_id %#x journal_mode %s; want %d %#x wal",
				i, version, appID, mode, latestVersion(ms), ApplicationID)
		}
		var sync int
		if err := s.db.QueryRow("PRAGMA synchronous").Scan(&sync); err != nil {
			t.Fatal(err)
		}
		if sync != 2 {
			t.Errorf("synchronous = %d, want 2 (FULL)", sync)
		}
		if got := mustRun(t, s, "orders", id); got.Checkpoint != "p1" {
			t.Errorf("open %d: checkpoint %q, want p1", i, got.Checkpoint)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLoadMigrations(t *testing.T) {
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 {
		t.Fatal("no migrations embedded")
	}
	for i, m := range ms {
		if i > 0 && m.version <= ms[i-1].version || strings.TrimSpace(m.sql) == "" {
			t.Errorf("migration %d: %+v", i, m.name)
		}
	}
}

func TestOpenConcurrentNewFile(t *testing.T) {
	path := statePath(t)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			s, err := Open(context.Background(), path, nil)
			if err == nil {
				err = s.Close()
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Errorf("Open: %v", err)
		}
	}
	openAt(t, path) // still a valid state file
}

func TestOpenRefusesOtherFiles(t *testing.T) {
	sqliteFile := func(stmts ...string) func(t *testing.T, path string) {
		return func(t *testing.T, path string) {
			db, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for _, q := range stmts {
				if _, err := db.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	raw := func(b []byte) func(t *testing.T, path string) {
		return func(t *testing.T, path string) {
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name string
		make func(t *testing.T, path string)
		want string
	}{
		{"garbage", raw([]byte("this is not a database, just some text\n")), "not a SQLite database"},
		{"short", raw([]byte("SQLite")), "not a SQLite database"},
		{"foreign tables", sqliteFile(
			"CREATE TABLE customers (id INTEGER PRIMARY KEY, email TEXT)",
			"INSERT INTO customers VALUES (1, 'a@example.com')"), "another application's"},
		{"foreign application id", sqliteFile("PRAGMA application_id = 1234"), "another application's"},
		{"foreign id and tables", sqliteFile(
			"PRAGMA application_id = 42", "CREATE TABLE jobs (name TEXT)"), "another application's"},
		{"newer idemsync", sqliteFile(
			"PRAGMA application_id = "+strconv.Itoa(ApplicationID), "PRAGMA user_version = 999",
			"CREATE TABLE jobs (name TEXT)"), "newer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := statePath(t)
			tc.make(t, path)
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			s, err := Open(context.Background(), path, testLogger(t))
			if err == nil {
				s.Close()
				t.Fatal("Open accepted the file")
			}
			t.Logf("error: %v (hint: %s)", err, contract.Hint(err))
			wantPermanent(t, err, path)
			if !strings.Contains(strings.ReplaceAll(err.Error(), path, "PATH"), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
			if contract.Hint(err) == "" {
				t.Errorf("error %q has no hint", err)
			}
			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(before, after) {
				t.Error("the file was modified")
			}
			if _, err := os.Stat(path + "-wal"); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a -wal file was left beside it: %v", err)
			}
		})
	}
}

func TestOpenAcceptsEmptyFile(t *testing.T) {
	path := statePath(t)
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s := openAt(t, path)
	startRun(t, s, contract.RunInfo{Job: "orders"})
}

func TestOpenFolderIsNotAFile(t *testing.T) {
	path := statePath(t)
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), path, nil)
	wantPermanent(t, err, path)
}

func TestOpenEmptyPath(t *testing.T) {
	_, err := Open(context.Background(), "", nil)
	if got := contract.ClassOf(err); got != contract.Invalid {
		t.Errorf("exit code %d (%v), want %d", got, err, contract.Invalid)
	}
}

func TestOpenPathWithURIReservedCharacters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "we?ird #dir%20", "state.db")
	s := openAt(t, path)
	startRun(t, s, contract.RunInfo{Job: "orders"})
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("state file not at its path: %v", err)
	}
}

func TestCheck(t *testing.T) {
	ctx := context.Background()
	path := statePath(t)
	s, err := Open(ctx, path, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Check(ctx); err != nil {
		t.Fatalf("Check on a new file: %v", err)
	}
	// Enough rows for the tables to span several pages.
	id := startRun(t, s, contract.RunInfo{Job: "orders"})
	for i := range 50 {
		commit(t, s, "orders", contract.PageCommit{RunID: id, Position: "p", Next: "n",
			Dead: []contract.DeadLetter{{Index: i, Reason: "bad", Raw: strings.Repeat("x", 2000)}}})
	}
	if _, err := s.db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Damage every page but the first (the header and schema).
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 4096; i < len(b); i += 7 {
		b[i] ^= 0x5a
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err = Open(ctx, path, testLogger(t))
	if err != nil {
		t.Logf("open error: %v", err)
		wantPermanent(t, err, path) // refusing at open is fine too
		return
	}
	defer s.Close()
	err = s.Check(ctx)
	t.Logf("quick check error: %v", err)
	wantPermanent(t, err, path)
	if !strings.Contains(err.Error(), "damaged") || contract.Hint(err) == "" {
		t.Errorf("error %q (hint %q) does not say the file is damaged", err, contract.Hint(err))
	}
}

func TestReadOnlyStateFile(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("file modes are a Unix notion")
	}
	if os.Geteuid() == 0 {
		t.Skip("root ignores file modes")
	}
	ctx := context.Background()
	path := statePath(t)
	s, err := Open(ctx, path, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	id := startRun(t, s, contract.RunInfo{Job: "orders", Checkpoint: "p1"})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o400); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(path, 0o600) })

	s, err = Open(ctx, path, testLogger(t))
	if err != nil {
		t.Fatalf("Open of a read-only state file (status must still work): %v", err)
	}
	defer s.Close()
	if got := mustRun(t, s, "orders", id); got.Checkpoint != "p1" {
		t.Errorf("checkpoint %q, want p1", got.Checkpoint)
	}
	err = s.CommitPage(ctx, "orders", &contract.PageCommit{RunID: id, Position: "p1", Next: "p2", Records: 3})
	wantPermanent(t, err, path)
	if contract.Hint(err) == "" {
		t.Errorf("error %q has no hint", err)
	}
	t.Logf("read-only commit error: %v (hint: %s)", err, contract.Hint(err))
	if got := mustRun(t, s, "orders", id); got.Checkpoint != "p1" || got.Pages != 0 {
		t.Errorf("run changed: %+v", got)
	}
}

func TestDiskFull(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	id := startRun(t, s, contract.RunInfo{Job: "orders"})
	commit(t, s, "orders", contract.PageCommit{RunID: id, Position: "p1", Next: "p2", Records: 1})
	before := takeSnapshot(t, s, "orders", id)

	// The connection may not grow the file: the next page is "disk full".
	var pages int
	if err := s.db.QueryRow("PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.Exec("PRAGMA max_page_count = " + strconv.Itoa(pages)); err != nil {
		t.Fatal(err)
	}
	err := s.CommitPage(ctx, "orders", &contract.PageCommit{RunID: id, Position: "p2", Next: "p3", Records: 1,
		Dead: []contract.DeadLetter{{Reason: "bad", Raw: strings.Repeat("y", 64<<10)}}})
	wantPermanent(t, err, s.Path())
	if contract.Hint(err) != hintFull {
		t.Errorf("hint %q, want the disk full hint (error %v)", contract.Hint(err), err)
	}
	sameSnapshot(t, before, takeSnapshot(t, s, "orders", id))
}
