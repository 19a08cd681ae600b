package checkpoint

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
)

// The lock is the state file's: reached through a symlink it is the same
// lock, and no lock file can be deleted to break it.
func TestLockFollowsFileIdentity(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	s := openAt(t, path)
	sym := filepath.Join(t.TempDir(), "link.db")
	if err := os.Symlink(path, sym); err != nil {
		t.Skip("no symlinks:", err)
	}
	unlock := lock(t, s, "orders")
	_, err := openAt(t, sym).Lock(context.Background(), "orders")
	wantLocked(t, err)
	// Removing every other file of both folders changes nothing.
	for _, d := range []string{dir, filepath.Dir(sym)} {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if n := e.Name(); n != "state.db" && n != "state.db-wal" && n != "state.db-shm" && n != "link.db" {
				_ = os.Remove(filepath.Join(d, n))
			}
		}
	}
	_, err = openAt(t, sym).Lock(context.Background(), "orders")
	wantLocked(t, err)
	unlock()
	lock(t, openAt(t, sym), "orders")()
}

// A state file another process keeps busy past the busy timeout is a
// transient failure (exit 3), as its hint says: try again.
func TestBusyStateFileIsTransient(t *testing.T) {
	old := busyTimeout
	busyTimeout = 100 * time.Millisecond
	t.Cleanup(func() { busyTimeout = old })
	path := statePath(t)
	s := openAt(t, path)
	other := openAt(t, path)
	tx, err := other.db.Begin() // BEGIN IMMEDIATE: holds the write lock
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	_, err = s.StartRun(context.Background(), &contract.RunInfo{Job: "orders"})
	if got := contract.ClassOf(err); got != contract.Transient {
		t.Fatalf("busy state file: exit %d (%v), want %d", got, err, contract.Transient)
	}
	if contract.Hint(err) == "" {
		t.Errorf("no hint: %v", err)
	}
}

// The lock's holder note is best effort: with the state file kept busy by
// another process, taking and releasing the lock wait holderBusyTimeout
// for it, not the full busy timeout each (a run against a busy state file
// used to spend three busy timeouts before its exit 3).
func TestLockHolderNoteDoesNotWaitOutBusyTimeout(t *testing.T) {
	old := busyTimeout
	busyTimeout = time.Minute
	t.Cleanup(func() { busyTimeout = old })
	path := statePath(t)
	s := openAt(t, path)
	other := openAt(t, path)
	tx, err := other.db.Begin() // BEGIN IMMEDIATE: holds the write lock
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	start := time.Now()
	unlock, err := s.Lock(context.Background(), "orders")
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	// Far below one busy timeout of a minute: the two notes gave up.
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("Lock and unlock took %v with the state file busy", took)
	}
	// The pool's connections still wait the full busy timeout afterwards.
	var ms int64
	if err := s.db.QueryRow("PRAGMA busy_timeout").Scan(&ms); err != nil || ms != busyTimeout.Milliseconds() {
		t.Fatalf("busy_timeout after the note: %d (%v), want %d", ms, err, busyTimeout.Milliseconds())
	}
}
