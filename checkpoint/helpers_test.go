package checkpoint

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
)

// testLogger sends the store's logs to the test log.
func testLogger(t *testing.T) *slog.Logger {
	t.Helper()
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// statePath returns a state file path in a fresh temporary folder.
func statePath(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "state.db")
}

// openAt opens the store at path and closes it when the test ends.
func openAt(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), path, testLogger(t))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// openTemp opens a new store in a temporary folder.
func openTemp(t *testing.T) *Store {
	t.Helper()
	return openAt(t, statePath(t))
}

// startRun starts a run of job and returns its ID.
func startRun(t *testing.T, s *Store, r contract.RunInfo) int64 {
	t.Helper()
	id, err := s.StartRun(context.Background(), &r)
	if err != nil {
		t.Fatalf("StartRun: %v", err)
	}
	return id
}

// commit commits p and fails the test on error.
func commit(t *testing.T, s *Store, job string, p contract.PageCommit) {
	t.Helper()
	if err := s.CommitPage(context.Background(), job, &p); err != nil {
		t.Fatalf("CommitPage: %v", err)
	}
}

// mustRun returns the run runID of job.
func mustRun(t *testing.T, s *Store, job string, runID int64) contract.RunInfo {
	t.Helper()
	runs, err := s.Runs(context.Background(), job, 0)
	if err != nil {
		t.Fatalf("Runs: %v", err)
	}
	for _, r := range runs {
		if r.ID == runID {
			return r
		}
	}
	t.Fatalf("run %d of job %s not found", runID, job)
	return contract.RunInfo{}
}

// snapshot is everything a commit could change for one job.
type snapshot struct {
	Runs  []contract.RunInfo
	Pages []contract.PageInfo
	Job   *contract.JobState
	Dead  []contract.DeadLetter
}

func takeSnapshot(t *testing.T, s *Store, job string, runID int64) snapshot {
	t.Helper()
	ctx := context.Background()
	var sn snapshot
	var err error
	if sn.Runs, err = s.Runs(ctx, job, 0); err != nil {
		t.Fatalf("Runs: %v", err)
	}
	if sn.Pages, err = s.Pages(ctx, runID); err != nil {
		t.Fatalf("Pages: %v", err)
	}
	if sn.Job, err = s.Job(ctx, job); err != nil {
		t.Fatalf("Job: %v", err)
	}
	if sn.Dead, err = s.DeadLetters(ctx, job, 0); err != nil {
		t.Fatalf("DeadLetters: %v", err)
	}
	return sn
}

func sameSnapshot(t *testing.T, before, after snapshot) {
	t.Helper()
	if !reflect.DeepEqual(before, after) {
		t.Errorf("state changed:\nbefore %+v\nafter  %+v", before, after)
	}
}

// wantPermanent checks that err is a *contract.Error with exit code 1 whose
// message names the state file.
func wantPermanent(t *testing.T, err error, path string) {
	t.Helper()
	if err == nil {
		t.Fatal("got no error")
	}
	var e *contract.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %q (%T) is not an *contract.Error", err, err)
	}
	if got := contract.ClassOf(err); got != contract.Permanent {
		t.Errorf("exit code = %d, want %d (%v)", got, contract.Permanent, err)
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not name the state file %s", err, path)
	}
}

// fixedClock returns a clock that starts at start and ticks 1.5s per call.
func fixedClock(start time.Time) func() time.Time {
	t := start
	return func() time.Time {
		t = t.Add(1500 * time.Millisecond)
		return t
	}
}

// slogTo returns a debug-level logger writing text to w.
func slogTo(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// unmigratedStore returns a Store over a new, empty state file that no
// migration has touched, and its one connection (closed with the test),
// for tests that migrate by hand.
func unmigratedStore(t *testing.T) (*Store, *sql.DB) {
	t.Helper()
	db, err := sql.Open("sqlite", dsn(statePath(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	return &Store{path: "test.db", db: db, log: testLogger(t), now: time.Now}, db
}
