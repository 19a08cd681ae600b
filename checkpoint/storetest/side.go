package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
)

func sideCases() []testCase {
	return []testCase{
		{"cycles", cycles},
		{"run metrics", runMetrics},
		{"metrics of a resource", resourceMetrics},
		{"refresh tokens", refreshTokens},
	}
}

// A cycle is open from OpenCycle (which replaces an open one) to
// CloseCycle; closing none is no error.
func cycles(t *testing.T, e *env) {
	s := e.store(t)
	ctx := context.Background()
	check := func(name string, wantOpen bool, want time.Time) {
		t.Helper()
		at, open, err := s.Cycle(ctx, name)
		if err != nil || open != wantOpen || !at.Equal(want) {
			t.Errorf("Cycle(%s) = %v, %v, %v; want %v, %v", name, at, open, err, want, wantOpen)
		}
	}
	check("shop", false, time.Time{})
	if err := s.OpenCycle(ctx, "shop", t0); err != nil {
		t.Fatal(err)
	}
	check("shop", true, t0)
	check("shop|orders", false, time.Time{})
	if err := s.OpenCycle(ctx, "shop", t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	check("shop", true, t0.Add(time.Hour))
	if err := s.OpenCycle(ctx, "shop|orders", t0); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := s.CloseCycle(ctx, "shop"); err != nil {
			t.Fatal(err)
		}
	}
	check("shop", false, time.Time{})
	check("shop|orders", true, t0)
}

// AddRunMetrics records how a command ended and returns the totals with
// the counters the pages moved; a failure keeps the last success; prune
// leaves the counters alone.
func runMetrics(t *testing.T, e *env) {
	s := e.store(t)
	ctx := context.Background()
	if m, err := s.Metrics(ctx, "orders", "orders"); err != nil || (m != contract.MetricsTotals{Job: "orders", Resource: "orders"}) {
		t.Errorf("metrics of a job never run = %+v, %v", m, err)
	}
	id := startRun(t, s, contract.RunInfo{Job: "orders"})
	commit(t, s, "orders", fullPage(id, "p1", "p2"))
	// A run whose end is never recorded (killed) counts its pages.
	if m, err := s.Metrics(ctx, "orders", "orders"); err != nil || m.Pages != 1 || m.Inserted != 2 || !m.LastRun.IsZero() {
		t.Errorf("metrics after a page of a run not ended: %+v, %v", m, err)
	}
	finish(t, s, id, contract.RunCompleted, "")
	m, err := s.AddRunMetrics(ctx, "orders", "orders", contract.RunMetrics{At: t0, Duration: 2 * time.Second, Success: true, SweepsSkipped: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := contract.MetricsTotals{Job: "orders", Resource: "orders", Pages: 1, Inserted: 2, Updated: 1, Unchanged: 1, Skipped: 1, Deleted: 1,
		SweepsSkipped: 1, LastRun: m.LastRun, LastSuccess: m.LastSuccess, LastDuration: 2 * time.Second}
	if m != want || !m.LastRun.Equal(t0) || !m.LastSuccess.Equal(t0) {
		t.Errorf("totals after a success:\n got %+v\nwant %+v at %v", m, want, t0)
	}
	later := t0.Add(time.Hour)
	m, err = s.AddRunMetrics(ctx, "orders", "orders", contract.RunMetrics{At: later, Duration: time.Second, ExitCode: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !m.LastRun.Equal(later) || !m.LastSuccess.Equal(t0) || m.LastExitCode != 3 || m.LastDuration != time.Second || m.SweepsSkipped != 1 {
		t.Errorf("totals after a failure: %+v", m)
	}
	if again, err := s.Metrics(ctx, "orders", "orders"); err != nil || again != m {
		t.Errorf("Metrics = %+v, %v; want what AddRunMetrics returned %+v", again, err, m)
	}
	// Prune never touches the counters.
	finish(t, s, startRun(t, s, contract.RunInfo{Job: "orders"}), contract.RunCompleted, "")
	time.Sleep(20 * time.Millisecond)
	if st, err := s.Prune(ctx, "orders", time.Millisecond); err != nil || st.Pages != 1 {
		t.Fatalf("Prune = %+v, %v; want the first run's page pruned", st, err)
	}
	if again, err := s.Metrics(ctx, "orders", "orders"); err != nil || again != m {
		t.Errorf("Metrics after prune = %+v, %v; want %+v", again, err, m)
	}
}

// The counters of a job file's resource "shop.orders" are kept under job
// shop, resource orders.
func resourceMetrics(t *testing.T, e *env) {
	s := e.store(t)
	ctx := context.Background()
	id := startRun(t, s, contract.RunInfo{Job: "shop.orders"})
	commit(t, s, "shop.orders", contract.PageCommit{RunID: id, Position: "p1", Next: "p2", Inserted: 4})
	m, err := s.Metrics(ctx, "shop", "orders")
	if err != nil || m.Pages != 1 || m.Inserted != 4 {
		t.Errorf("Metrics(shop, orders) = %+v, %v; want the resource's page", m, err)
	}
	if m, err := s.Metrics(ctx, "shop.orders", "shop.orders"); err != nil || m.Pages != 0 {
		t.Errorf("counters also kept under the state name: %+v, %v", m, err)
	}
}

// A refresh token is stored per job file and credential with its pending
// flag; DropRefreshTokens removes those of credentials no longer used.
func refreshTokens(t *testing.T, e *env) {
	s := e.store(t)
	ctx := context.Background()
	if tok, pending, err := s.LoadRefreshToken(ctx, "shop", "cred-a", "seed-a"); err != nil || tok != "" || pending {
		t.Errorf("token never stored = %q, %v, %v", tok, pending, err)
	}
	for _, c := range []struct{ job, cred, tok string }{{"shop", "cred-a", "ta"}, {"shop", "cred-b", "tb"}, {"mail", "cred-a", "tm"}} {
		if err := s.SaveRefreshToken(ctx, c.job, c.cred, "seed", c.tok, c.cred == "cred-b"); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SaveRefreshToken(ctx, "shop", "cred-a", "seed", "ta2", false); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		job, cred, tok string
		pending        bool
	}{{"shop", "cred-a", "ta2", false}, {"shop", "cred-b", "tb", true}, {"mail", "cred-a", "tm", false}} {
		if tok, pending, err := s.LoadRefreshToken(ctx, c.job, c.cred, "seed"); err != nil || tok != c.tok || pending != c.pending {
			t.Errorf("LoadRefreshToken(%s, %s) = %q, %v, %v; want %q, %v", c.job, c.cred, tok, pending, err, c.tok, c.pending)
		}
	}
	n, err := s.DropRefreshTokens(ctx, "shop", []string{"cred-a"}, nil)
	if err != nil || n != 1 {
		t.Errorf("DropRefreshTokens = %d, %v; want 1", n, err)
	}
	if tok, _, _ := s.LoadRefreshToken(ctx, "shop", "cred-b", "seed"); tok != "" {
		t.Errorf("dropped token still loads: %q", tok)
	}
	if tok, _, _ := s.LoadRefreshToken(ctx, "mail", "cred-a", "seed"); tok != "tm" {
		t.Errorf("another job file's token: %q", tok)
	}
}
