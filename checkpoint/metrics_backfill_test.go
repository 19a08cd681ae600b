package checkpoint

import (
	"context"
	"testing"
	"time"
)

// Migration 0016 gives every job the last success its runs show: a state
// file whose successes were never recorded in metrics_totals (written
// before it existed, or a process that ended first) reported 0.
func TestMigrationBackfillsLastSuccess(t *testing.T) {
	ctx := context.Background()
	s, db := unmigratedStore(t)
	all, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	var before []migration
	for _, m := range all {
		if m.version < 16 {
			before = append(before, m)
		}
	}
	if len(before) == len(all) {
		t.Fatal("no migration 16")
	}
	if err := s.migrateTo(ctx, before); err != nil {
		t.Fatal(err)
	}
	t1 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	t2 := t1.Add(time.Hour)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}
	for _, j := range []string{"orders", "shop.items", "broken", "recorded"} {
		exec(`INSERT INTO jobs (name, created_at, updated_at) VALUES (?, ?, ?)`, j, formatTime(t1), formatTime(t1))
	}
	run := func(job, status string, end time.Time) {
		exec(`INSERT INTO runs (job, kind, status, started_at, finished_at, number) VALUES (?, 'run', ?, ?, ?, 1)`,
			job, status, formatTime(end.Add(-time.Minute)), formatTime(end))
	}
	run("orders", "completed", t1)
	run("orders", "failed", t2) // a failure is no success
	run("shop.items", "partial", t2)
	run("broken", "failed", t2)
	run("recorded", "completed", t1)
	// orders had page counters but no recorded end; recorded has a newer
	// success than its runs show (its runs were pruned): kept.
	exec(`INSERT INTO metrics_totals (job, resource, pages, last_run_at) VALUES ('orders', 'orders', 3, '')`)
	exec(`INSERT INTO metrics_totals (job, resource, last_run_at, last_success_at) VALUES ('recorded', 'recorded', ?, ?)`, formatTime(t2), formatTime(t2))

	if err := s.migrateTo(ctx, all); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		job, resource string
		want          time.Time
		pages         int64
	}{
		{"orders", "orders", t1, 3},
		{"shop", "items", t2, 0},
		{"broken", "broken", time.Time{}, 0},
		{"recorded", "recorded", t2, 0},
	} {
		m, err := s.Metrics(ctx, tt.job, tt.resource)
		if err != nil {
			t.Fatal(err)
		}
		if !m.LastSuccess.Equal(tt.want) || m.Pages != tt.pages {
			t.Errorf("%s/%s: last success %v, pages %d; want %v, %d", tt.job, tt.resource, m.LastSuccess, m.Pages, tt.want, tt.pages)
		}
	}
}
