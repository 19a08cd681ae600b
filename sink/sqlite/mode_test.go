package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sinktest"
	"github.com/idemsync/idemsync/sink/sqlite"
)

// openTargetAndWrite opens the target through OpenTarget and writes one
// row, so that the database and its -wal and -shm files exist.
func openTargetAndWrite(t *testing.T, target contract.Conn) {
	t.Helper()
	ctx := context.Background()
	s, err := sqlite.OpenTarget(ctx, target, nil)
	if err != nil {
		t.Fatalf("open %s: %v", target.URL, err)
	}
	defer s.Close()
	tbl := &contract.Table{Name: "t", Key: []string{"id"}, Columns: []contract.Column{{Name: "id", Type: contract.TypeText}}, Create: true}
	sinktest.MustPrepare(t, s, tbl)
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Inserted: 1}, sinktest.Row("a"))
}

func fileMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// A new SQLite target file, and the -wal and -shm files beside it, are
// created with target.mode (0600 by default) whatever the umask; an
// existing file keeps its mode.
func TestOpenTargetFileMode(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		mode os.FileMode
		want os.FileMode
	}{{0, 0o600}, {0o640, 0o640}, {0o664, 0o664}} {
		path := filepath.Join(dir, fmt.Sprintf("m%o", tc.mode), "target.db")
		openTargetAndWrite(t, contract.Conn{URL: "sqlite:" + path, Mode: tc.mode})
		for _, f := range []string{path, path + "-wal", path + "-shm"} {
			if _, err := os.Stat(f); os.IsNotExist(err) {
				continue // -wal and -shm may be gone after a clean close
			}
			if got := fileMode(t, f); got != tc.want {
				t.Errorf("mode %04o: %s is %04o, want %04o", tc.mode, filepath.Base(f), got, tc.want)
			}
		}
	}

	// An existing file is left alone.
	path := filepath.Join(dir, "existing.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	openTargetAndWrite(t, contract.Conn{URL: "sqlite:" + path, Mode: 0o600})
	if got := fileMode(t, path); got != 0o644 {
		t.Errorf("existing file: mode %04o, want 0644 kept", got)
	}
}

// While the sink is open the -wal and -shm files exist; they get the
// target's mode too.
func TestOpenTargetWALMode(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "w.db")
	s, err := sqlite.OpenTarget(ctx, contract.Conn{URL: "sqlite:" + path, Mode: 0o640}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tbl := &contract.Table{Name: "t", Key: []string{"id"}, Columns: []contract.Column{{Name: "id", Type: contract.TypeText}}, Create: true}
	sinktest.MustPrepare(t, s, tbl)
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Inserted: 1}, sinktest.Row("a"))
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		if got := fileMode(t, f); got != 0o640 {
			t.Errorf("%s is %04o, want 0640", filepath.Base(f), got)
		}
	}
}
