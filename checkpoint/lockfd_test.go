//go:build !windows

package checkpoint

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
	"golang.org/x/sys/unix"
)

const stateHelperEnv = "IDEMSYNC_TEST_STATE_HELPER"

// SQLite's lock bytes in the database file (its os.h): the shared range.
const (
	sqliteSharedFirst = 0x40000002
	sqliteSharedSize  = 510
)

// TestStateHelperProcess is not a test: run as a child by
// TestOurDescriptorsKeepSQLiteLocks, it does what IDEMSYNC_TEST_STATE_HELPER
// says ("ACTION PATH"), prints the answer and exits. "shared" asks the
// kernel whether some process holds a lock on SQLite's shared bytes of the
// file; "pages" prints the pages of job orders' latest run.
func TestStateHelperProcess(t *testing.T) {
	action, path, ok := strings.Cut(os.Getenv(stateHelperEnv), " ")
	if !ok {
		t.Skip("helper process only")
	}
	switch action {
	case "shared":
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: sqliteSharedFirst, Len: sqliteSharedSize}
		if err := unix.FcntlFlock(f.Fd(), unix.F_GETLK, &lk); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		if lk.Type == unix.F_UNLCK {
			fmt.Println("none")
		} else {
			fmt.Println("held by", lk.Pid)
		}
	case "pages":
		ctx := context.Background()
		s, err := Open(ctx, path, nil)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		runs, err := s.Runs(ctx, "orders", 0)
		if err != nil || len(runs) == 0 {
			fmt.Println("error:", err, len(runs), "runs")
			os.Exit(1)
		}
		fmt.Println(runs[0].Pages)
		s.Close()
	}
	os.Exit(0)
}

// stateHelper runs TestStateHelperProcess in a child process and returns
// what it printed.
func stateHelper(t *testing.T, action, path string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestStateHelperProcess$", "-test.v=false")
	cmd.Env = append(os.Environ(), stateHelperEnv+"="+action+" "+path)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper %s: %v (said %q)", action, err, out)
	}
	return strings.TrimSpace(string(out))
}

// SQLite holds a shared POSIX (fcntl) lock on a WAL state file for as long
// as a connection has it open; a process that closes the file and finds
// no such lock takes itself for the file's last user, checkpoints it and
// deletes its -wal and -shm files. Closing any descriptor of a file drops
// every POSIX lock the process holds on it, so our own descriptors of the
// state file (the run lock, its probe, the header check of a second Store)
// must never be closed while SQLite has the file open. With the lock gone,
// the backup docs/operations.md gives (sqlite3 state.db ".backup ...", an
// sqlite3 older than idemsync's SQLite, 3.40 here) deleted the -wal file of a run
// in progress, and the run's next page went into the deleted file, read by
// no other process.
func TestOurDescriptorsKeepSQLiteLocks(t *testing.T) {
	ctx := context.Background()
	sqlite3, _ := exec.LookPath("sqlite3")
	for _, tc := range []struct {
		name string
		do   func(t *testing.T, s *Store, path string)
	}{
		{"lock probe", func(t *testing.T, s *Store, _ string) {
			if _, err := s.Job(ctx, "orders"); err != nil { // as every run starts
				t.Fatal(err)
			}
		}},
		{"lock released", func(t *testing.T, s *Store, _ string) {
			lock(t, s, "customers")()
		}},
		{"lock refused", func(t *testing.T, s *Store, path string) {
			unlock := lock(t, openAt(t, path), "customers")
			defer unlock()
			_, err := s.Lock(ctx, "customers")
			wantLocked(t, err)
		}},
		{"second store", func(t *testing.T, _ *Store, path string) {
			s2 := openAt(t, path) // as serve opens one per request
			if err := s2.Close(); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := statePath(t)
			s := openAt(t, path)
			id := startRun(t, s, contract.RunInfo{Job: "orders", Kind: contract.KindRun})
			tc.do(t, s, path)

			if got, want := stateHelper(t, "shared", path), fmt.Sprint("held by ", os.Getpid()); got != want {
				t.Errorf("SQLite's shared lock on the state file: another process sees %q, want %q", got, want)
			}
			if sqlite3 == "" {
				t.Skip("no sqlite3 command to back the file up with")
			}
			if out, err := exec.Command(sqlite3, path, ".backup "+filepath.Join(t.TempDir(), "copy.db")).CombinedOutput(); err != nil {
				t.Fatalf("sqlite3 .backup: %v: %s", err, out)
			}
			commit(t, s, "orders", contract.PageCommit{RunID: id, Position: "page:1", Next: "page:2", Records: 1, Hash: "h1"})
			if got := stateHelper(t, "pages", path); got != "1" {
				t.Errorf("another process reads %s page(s) of the run, want 1: the commit went to a deleted -wal file", got)
			}
		})
	}
}
