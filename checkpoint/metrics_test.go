package checkpoint

import (
	"context"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
	idsync "github.com/idemsync/idemsync/sync"
)

// Counters move with each page's commit (and a sweep's completion), run
// end or not, and survive prune; a failure moves the last run and exit
// code but leaves the last success where it was.
func TestRunMetricsTotals(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	t0 := time.Date(2026, 5, 1, 2, 0, 0, 0, time.UTC)
	got, err := s.Metrics(ctx, "orders", "orders")
	if err != nil || got.Pages != 0 || !got.LastRun.IsZero() || !got.LastSuccess.IsZero() {
		t.Fatalf("before any run: %+v, %v", got, err)
	}
	// A run whose end is never recorded (killed) still counts its pages.
	id := startRun(t, s, idsync.RunInfo{Job: "orders", Full: true})
	commit(t, s, "orders", idsync.PageCommit{RunID: id, Position: "p1", Next: "p2", Counts: contract.Counts{Inserted: 100}})
	if got, err = s.Metrics(ctx, "orders", "orders"); err != nil || got.Pages != 1 || got.Inserted != 100 || !got.LastRun.IsZero() {
		t.Fatalf("after a page of a run not ended: %+v, %v", got, err)
	}
	commit(t, s, "orders", idsync.PageCommit{RunID: id, Position: "p2", Next: "p3", Counts: contract.Counts{Inserted: 20, Deleted: 1}})
	if err := s.CompletePass(ctx, id, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddRunMetrics(ctx, "orders", "orders", RunMetrics{At: t0, Duration: 2 * time.Second, Success: true}); err != nil {
		t.Fatal(err)
	}
	id = startRun(t, s, idsync.RunInfo{Job: "orders"})
	commit(t, s, "orders", idsync.PageCommit{RunID: id, Position: "p1", Next: "p2", Skipped: 1,
		Counts: contract.Counts{Inserted: 5, Updated: 2, Unchanged: 7}})
	if _, err := s.AddRunMetrics(ctx, "orders", "orders", RunMetrics{At: t0.Add(time.Hour), Duration: time.Second, ExitCode: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prune(ctx, "orders", 0); err != nil {
		t.Fatal(err)
	}
	if got, err = s.Metrics(ctx, "orders", "orders"); err != nil {
		t.Fatal(err)
	}
	want := MetricsTotals{Job: "orders", Resource: "orders", Pages: 3, Inserted: 125, Updated: 2, Unchanged: 7, Skipped: 1, Deleted: 4,
		LastRun: t0.Add(time.Hour), LastSuccess: t0, LastDuration: time.Second, LastExitCode: 3}
	if got != want {
		t.Errorf("totals\n got %+v\nwant %+v", got, want)
	}
	other, err := s.Metrics(ctx, "customers", "customers")
	if err != nil || other.Pages != 0 {
		t.Errorf("another job's totals: %+v, %v", other, err)
	}
}

// A resource of a job file counts under (file, resource), as
// --metrics-file labels it.
func TestRunMetricsResourceKey(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	id := startRun(t, s, idsync.RunInfo{Job: "shop.orders"})
	commit(t, s, "shop.orders", idsync.PageCommit{RunID: id, Position: "p1", Next: "p2", Counts: contract.Counts{Inserted: 4}})
	got, err := s.Metrics(ctx, "shop", "orders")
	if err != nil || got.Pages != 1 || got.Inserted != 4 {
		t.Errorf("shop/orders: %+v, %v", got, err)
	}
}
