package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
)

func pendingCases() []testCase {
	return []testCase{
		{"prior pass, sightings and prune (two passes)", priorPass},
		{"prior pass with a page without keys is none", priorPassIncomplete},
	}
}

// provingPass starts a full pass of orders, commits one page per key list
// (nil: a page without keys) and completes it; swept records its sweep
// with 2 rows pending, else its sweep is skipped.
func provingPass(t *testing.T, s contract.Store, swept bool, pages ...[]string) int64 {
	t.Helper()
	ctx := context.Background()
	id := startRun(t, s, contract.RunInfo{Job: "orders", Full: true, LiveBefore: 7})
	for i, keys := range pages {
		commit(t, s, "orders", contract.PageCommit{RunID: id, Position: string(rune('a' + i)), Next: string(rune('b' + i)), Keys: keys})
	}
	if swept {
		if err := s.RecordSweep(ctx, id, 2); err != nil {
			t.Fatal(err)
		}
	} else if err := s.SkipSweep(ctx, id, "no proof"); err != nil {
		t.Fatal(err)
	}
	if err := s.CompletePass(ctx, id, 0); err != nil {
		t.Fatal(err)
	}
	return id
}

// The previous proving pass of a run is the last completed full pass whose
// sweep ran, with all its keys; the sightings are its keys and those of
// every pass after it; prune keeps their pages (docs/deletions.md, "Two
// passes").
func priorPass(t *testing.T, e *env) {
	s := e.store(t)
	ctx := context.Background()
	older := provingPass(t, s, true, []string{"k0"})
	prior := provingPass(t, s, true, []string{"k1", "k2"}, []string{"k3"})
	skipped := provingPass(t, s, false, []string{"k4"}, nil)
	cur := startRun(t, s, contract.RunInfo{Job: "orders", Full: true})

	p, ok, err := s.PriorPass(ctx, cur)
	if err != nil || !ok || p.ID != prior || p.LiveBefore != 7 || p.StartedAt.IsZero() {
		t.Fatalf("PriorPass(%d) = %+v, %v, %v; want run %d", cur, p, ok, err, prior)
	}
	var got []string
	if err := s.SightedKeys(ctx, cur, p.ID, func(k string) error { got = append(got, k); return nil }); err != nil {
		t.Fatal(err)
	}
	if want := []string{"k1", "k2", "k3", "k4"}; !slices.Equal(got, want) {
		t.Errorf("sighted keys %q, want %q (the prior pass's and the skipped pass's after it)", got, want)
	}
	if r := run(t, s, "orders", prior); !r.Swept || r.PendingDeletes != 2 {
		t.Errorf("run %d: swept %v pending %d, want true and 2", prior, r.Swept, r.PendingDeletes)
	}
	if m, err := s.Metrics(ctx, "orders", "orders"); err != nil || m.PendingDeletes != 2 {
		t.Errorf("metrics pending deletes = %+v, %v; want 2", m, err)
	}

	// prune keeps the prior pass and the skipped one after it with their
	// keys; the older proving pass goes.
	finish(t, s, cur, contract.RunPartial, "")
	time.Sleep(10 * time.Millisecond)
	if _, err := s.Prune(ctx, "orders", 0); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[int64]int{older: 0, prior: 2, skipped: 2} {
		if ps, _ := s.Pages(ctx, id); len(ps) != want {
			t.Errorf("run %d has %d pages after prune, want %d", id, len(ps), want)
		}
	}
	if p, ok, err := s.PriorPass(ctx, cur); err != nil || !ok || p.ID != prior {
		t.Errorf("PriorPass after prune = %+v, %v, %v", p, ok, err)
	}
}

// A proving pass with a page committed without its keys cannot be
// compared with: there is no prior pass.
func priorPassIncomplete(t *testing.T, e *env) {
	s := e.store(t)
	provingPass(t, s, true, []string{"k1"}, nil)
	cur := startRun(t, s, contract.RunInfo{Job: "orders", Full: true})
	if _, ok, err := s.PriorPass(context.Background(), cur); err != nil || ok {
		t.Errorf("PriorPass over a pass with a page without keys: ok %v, %v; want none", ok, err)
	}
}
