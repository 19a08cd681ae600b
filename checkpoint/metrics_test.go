package checkpoint

import (
	"context"
	"testing"
	"time"
)

// Counters add up over runs and survive prune; a failure moves the last
// run and exit code but leaves the last success where it was.
func TestRunMetricsTotals(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	t0 := time.Date(2026, 5, 1, 2, 0, 0, 0, time.UTC)
	got, err := s.Metrics(ctx, "orders", "orders")
	if err != nil || got.Pages != 0 || !got.LastRun.IsZero() || !got.LastSuccess.IsZero() {
		t.Fatalf("before any run: %+v, %v", got, err)
	}
	steps := []RunMetrics{
		{Pages: 3, Inserted: 120, At: t0, Duration: 2 * time.Second, Success: true},
		{Pages: 1, Inserted: 5, Updated: 2, Skipped: 1, At: t0.Add(time.Hour), Duration: time.Second, ExitCode: 3},
	}
	for _, m := range steps {
		if got, err = s.AddRunMetrics(ctx, "orders", "orders", m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Prune(ctx, "orders", 0); err != nil {
		t.Fatal(err)
	}
	if got, err = s.Metrics(ctx, "orders", "orders"); err != nil {
		t.Fatal(err)
	}
	want := MetricsTotals{Job: "orders", Resource: "orders", Pages: 4, Inserted: 125, Updated: 2, Skipped: 1,
		LastRun: t0.Add(time.Hour), LastSuccess: t0, LastDuration: time.Second, LastExitCode: 3}
	if got != want {
		t.Errorf("totals\n got %+v\nwant %+v", got, want)
	}
	other, err := s.Metrics(ctx, "customers", "customers")
	if err != nil || other.Pages != 0 {
		t.Errorf("another job's totals: %+v, %v", other, err)
	}
}
