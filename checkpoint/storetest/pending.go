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
		{"prior pass followed by a full pass with a page without keys is none", priorPassUnsighted},
		{"prior pass that committed no page is one, with no key", priorPassNoPage},
		{"prune drops the keys no later sweep reads", pruneSupersededKeys},
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
	skipped := provingPass(t, s, false, []string{"k4"}, []string{"k5"})
	cur := startRun(t, s, contract.RunInfo{Job: "orders", Full: true})

	p, ok, err := s.PriorPass(ctx, cur)
	if err != nil || !ok || p.ID != prior || p.LiveBefore != 7 || p.StartedAt.IsZero() {
		t.Fatalf("PriorPass(%d) = %+v, %v, %v; want run %d", cur, p, ok, err, prior)
	}
	var got []string
	if err := s.SightedKeys(ctx, cur, p.ID, func(k string) error { got = append(got, k); return nil }); err != nil {
		t.Fatal(err)
	}
	if want := []string{"k1", "k2", "k3", "k4", "k5"}; !slices.Equal(got, want) {
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

// A full pass after the proving pass with a page committed without its
// keys (run while the job had deletes: keep, or a page with dead letters)
// listed records nobody knows: its sightings, which clear pending rows,
// are incomplete, and the sweep must not read them as "not seen"
// (docs/deletions.md, "Two passes"): there is no prior pass, until a
// proving pass after it.
func priorPassUnsighted(t *testing.T, e *env) {
	s := e.store(t)
	ctx := context.Background()
	provingPass(t, s, true, []string{"k1"})
	provingPass(t, s, false, []string{"k2"}, nil)
	cur := startRun(t, s, contract.RunInfo{Job: "orders", Full: true})
	if p, ok, err := s.PriorPass(ctx, cur); err != nil || ok {
		t.Errorf("PriorPass over a full pass since with a page without keys = %+v, %v, %v; want none", p, ok, err)
	}
	// The next proving pass is the prior pass again. A run that is not a
	// full pass records no keys (its writes are its sightings): it does
	// not count.
	finish(t, s, cur, contract.RunAbandoned, "")
	prior := provingPass(t, s, true, []string{"k1"})
	inc := startRun(t, s, contract.RunInfo{Job: "orders"})
	commit(t, s, "orders", contract.PageCommit{RunID: inc, Position: "a", Next: "b"})
	finish(t, s, inc, contract.RunCompleted, "")
	cur = startRun(t, s, contract.RunInfo{Job: "orders", Full: true})
	if p, ok, err := s.PriorPass(ctx, cur); err != nil || !ok || p.ID != prior {
		t.Errorf("PriorPass over an incremental run since = %+v, %v, %v; want run %d", p, ok, err, prior)
	}
}

// A proving pass that committed no page (a child resource's pass with no
// parent row: docs/job-file.md, "Parent → child fan-out") saw no key, and
// that empty set is complete: it is the prior pass of the next, so two
// such passes remove what both missed (docs/deletions.md, "Two passes").
func priorPassNoPage(t *testing.T, e *env) {
	s := e.store(t)
	ctx := context.Background()
	provingPass(t, s, true, []string{"k1"})
	empty := provingPass(t, s, true)
	cur := startRun(t, s, contract.RunInfo{Job: "orders", Full: true})
	p, ok, err := s.PriorPass(ctx, cur)
	if err != nil || !ok || p.ID != empty {
		t.Fatalf("PriorPass after a pass with no page = %+v, %v, %v; want run %d", p, ok, err, empty)
	}
	var got []string
	if err := s.SightedKeys(ctx, cur, p.ID, func(k string) error { got = append(got, k); return nil }); err != nil || len(got) != 0 {
		t.Errorf("sighted keys %q, %v; want none", got, err)
	}
}

// keysOf returns the keys SeenKeys reads for run id, and whether they are
// all there.
func keysOf(t *testing.T, s contract.Store, id int64) ([]string, bool) {
	t.Helper()
	var got []string
	complete, err := s.SeenKeys(context.Background(), id, func(k string) error { got = append(got, k); return nil })
	if err != nil {
		t.Fatalf("SeenKeys(%d): %v", id, err)
	}
	return got, complete
}

// The keys of the runs before the last proving pass are read by no later
// sweep (its prior pass is that pass or a later one): prune drops them,
// even within the retention, so the state holds the keys of about two
// passes, not of every run the retention keeps (docs/deletions.md, "How
// the keys are recorded"). It keeps the runs, their pages, and the keys of
// the last proving pass, of every pass after it and of an unfinished run.
func pruneSupersededKeys(t *testing.T, e *env) {
	s := e.store(t)
	ctx := context.Background()
	older := provingPass(t, s, true, []string{"k0"})
	unfinished := startRun(t, s, contract.RunInfo{Job: "orders", Full: true})
	commit(t, s, "orders", contract.PageCommit{RunID: unfinished, Position: "a", Next: "b", Keys: []string{"u1"}})
	finish(t, s, unfinished, contract.RunFailed, "")
	prior := provingPass(t, s, true, []string{"k1", "k2"}, []string{"k3"})
	skipped := provingPass(t, s, false, []string{"k4"})
	cur := startRun(t, s, contract.RunInfo{Job: "orders", Full: true})
	commit(t, s, "orders", contract.PageCommit{RunID: cur, Position: "a", Next: "b", Keys: []string{"k5"}})

	if _, err := s.Prune(ctx, "orders", time.Hour); err != nil {
		t.Fatal(err)
	}
	if keys, complete := keysOf(t, s, older); complete || len(keys) != 0 {
		t.Errorf("run %d (before the last proving pass): keys %q, complete %v after prune; want none", older, keys, complete)
	}
	if ps, _ := s.Pages(ctx, older); len(ps) != 1 {
		t.Errorf("run %d has %d pages after prune, want its 1 (only its keys go)", older, len(ps))
	}
	for id, want := range map[int64][]string{unfinished: {"u1"}, prior: {"k1", "k2", "k3"}, skipped: {"k4"}, cur: {"k5"}} {
		if keys, complete := keysOf(t, s, id); !complete || !slices.Equal(keys, want) {
			t.Errorf("run %d: keys %q, complete %v after prune; want %q", id, keys, complete, want)
		}
	}
	p, ok, err := s.PriorPass(ctx, cur)
	if err != nil || !ok || p.ID != prior {
		t.Fatalf("PriorPass(%d) after prune = %+v, %v, %v; want run %d", cur, p, ok, err, prior)
	}
	var got []string
	if err := s.SightedKeys(ctx, cur, p.ID, func(k string) error { got = append(got, k); return nil }); err != nil {
		t.Fatal(err)
	}
	if want := []string{"k1", "k2", "k3", "k4"}; !slices.Equal(got, want) {
		t.Errorf("sighted keys after prune %q, want %q", got, want)
	}
}
