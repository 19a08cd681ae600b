package checkpoint

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	idsync "github.com/idemsync/idemsync/sync"
)

// A child run's parent snapshot is stored with the run and read back in
// order; zero parents is an empty snapshot, not none; a run without one
// says so; pruning a run deletes its snapshot.
func TestRunParents(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	var _ idsync.ParentStore = s
	snap := []string{`{"id":"1"}`, `{"id":"2","code":"a\"b"}`, `{"id":"10"}`}
	id := startRun(t, s, idsync.RunInfo{Job: "shop_items", Parents: snap})
	got, err := s.RunParents(ctx, id)
	if err != nil || !slices.Equal(got, snap) {
		t.Fatalf("RunParents: %q, %v; want %q", got, err, snap)
	}
	empty := startRun(t, s, idsync.RunInfo{Job: "shop_empty", Parents: []string{}})
	if got, err := s.RunParents(ctx, empty); err != nil || got == nil || len(got) != 0 {
		t.Errorf("RunParents of a run with no parent rows: %q, %v; want an empty snapshot", got, err)
	}
	plain := startRun(t, s, idsync.RunInfo{Job: "orders"})
	if _, err := s.RunParents(ctx, plain); err == nil || !strings.Contains(err.Error(), "no parent snapshot") {
		t.Errorf("RunParents of a run without a snapshot: %v", err)
	}

	// pruned with its run
	now := time.Now()
	s.now = func() time.Time { return now }
	commit(t, s, "shop_items", idsync.PageCommit{RunID: id, Position: "p1", Next: "p2", Hash: "h", FinishedAt: now})
	next := startRun(t, s, idsync.RunInfo{Job: "shop_items", Parents: snap[:1]})
	commit(t, s, "shop_items", idsync.PageCommit{RunID: next, Position: "p1", Next: "p2", Hash: "h2", FinishedAt: now})
	now = now.Add(400 * 24 * time.Hour)
	if st, err := s.Prune(ctx, "shop_items", DefaultRetention); err != nil || st.Runs != 1 {
		t.Fatalf("prune: %+v, %v; want the older run pruned", st, err)
	}
	var n int
	if err := s.db.QueryRow(`SELECT count(*) FROM run_parents WHERE run_id = ?`, id).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d snapshot rows of the pruned run left (%v)", n, err)
	}
	if got, err := s.RunParents(ctx, next); err != nil || len(got) != 1 {
		t.Errorf("snapshot of the kept run: %q, %v", got, err)
	}
}

// 0008 ships beside a 0007 numbered in parallel: a state file migrated
// by this build (8 applied, 7 unknown) gets 7 from a build that has both.
func TestMigration0008BeforeParallel0007(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	if latestVersion(ms) < 8 {
		t.Fatalf("latest migration %d, want at least 8", latestVersion(ms))
	}
	if slices.ContainsFunc(ms, func(m migration) bool { return m.version == 7 }) {
		t.Skip("0007 is in this build: nothing runs side by side")
	}
	seven := migration{version: 7, name: "0007_parallel.sql", sql: "CREATE TABLE parallel_seven (x INTEGER) STRICT"}
	at := slices.IndexFunc(ms, func(m migration) bool { return m.version > 7 })
	withSeven := slices.Concat(ms[:at], []migration{seven}, ms[at:])
	if err := s.migrateTo(ctx, withSeven); err != nil {
		t.Fatalf("migrate with 0007 added: %v", err)
	}
	var n int
	if err := s.db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name = 'parallel_seven'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("0007 not applied to a file at version 8: %d, %v", n, err)
	}
	if _, err := s.RunParents(ctx, 1); err == nil || !strings.Contains(err.Error(), "no such run") {
		t.Errorf("run_parents after the migration: %v", err)
	}
}
