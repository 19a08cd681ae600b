package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
)

func maintenanceCases() []testCase {
	return []testCase{
		{"prune keeps what runs need", pruneKeeps},
		{"forget removes one resource", forget},
		{"compact keeps the state", compact},
	}
}

// Prune deletes old finished runs with their pages, but never the latest
// run, the latest completed run, the latest completed run of kind run
// (what continue: true starts from) or an unfinished run; a pruned run
// with dead letters keeps its row (they name it) and loses its pages.
// Runs newer than keep stay.
func pruneKeeps(t *testing.T, e *env) {
	s := e.store(t)
	ctx := context.Background()
	runWithPage := func(kind, status string, dead bool) int64 {
		id := startRun(t, s, contract.RunInfo{Job: "orders", Kind: kind})
		p := contract.PageCommit{RunID: id, Position: "p1", Next: "p2"}
		if dead {
			p.Dead = []contract.DeadLetter{{Reason: "bad", Raw: "{}"}}
		}
		commit(t, s, "orders", p)
		finish(t, s, id, status, "")
		return id
	}
	old := runWithPage(contract.KindRun, contract.RunCompleted, false)         // pruned
	abandoned := runWithPage(contract.KindRun, contract.RunAbandoned, false)   // pruned
	withDead := runWithPage(contract.KindRun, contract.RunCompleted, true)     // row kept, pages pruned
	failed := runWithPage(contract.KindRun, contract.RunFailed, false)         // unfinished: kept
	lastSync := runWithPage(contract.KindRun, contract.RunCompleted, false)    // latest completed run of kind run
	lastDone := runWithPage(contract.KindReplay, contract.RunCompleted, false) // latest completed run
	latest := runWithPage(contract.KindReplay, contract.RunAbandoned, false)   // latest run
	other := startRun(t, s, contract.RunInfo{Job: "other"})
	finish(t, s, other, contract.RunCompleted, "")

	if st, err := s.Prune(ctx, "orders", time.Hour); err != nil || st.Runs != 0 || st.Pages != 0 || st.Kept != 7 {
		t.Errorf("Prune of runs newer than keep = %+v, %v; want nothing deleted, 7 kept", st, err)
	}
	time.Sleep(20 * time.Millisecond)
	st, err := s.Prune(ctx, "orders", time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if (st != contract.PruneStats{Job: "orders", Runs: 2, Pages: 3, Kept: 5}) {
		t.Errorf("Prune = %+v, want 2 runs and 3 pages deleted, 5 runs kept", st)
	}
	runs, err := s.Runs(ctx, "orders", 0)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	want := []int64{latest, lastDone, lastSync, failed, withDead}
	if len(ids) != len(want) {
		t.Fatalf("runs kept %v, want %v (pruned %d and %d)", ids, want, old, abandoned)
	}
	for i := range want {
		if ids[i] != want[i] {
			t.Fatalf("runs kept %v, want %v", ids, want)
		}
	}
	for id, n := range map[int64]int{withDead: 0, failed: 1, lastSync: 1, lastDone: 1, latest: 1, old: 0} {
		if got := len(pages(t, s, id)); got != n {
			t.Errorf("run %d has %d pages after prune, want %d", id, got, n)
		}
	}
	if d, err := s.DeadLetters(ctx, "orders", 0); err != nil || len(d) != 1 || d[0].RunID != withDead {
		t.Errorf("dead letters after prune: %+v, %v", d, err)
	}
	if runs, _ := s.Runs(ctx, "other", 0); len(runs) != 1 {
		t.Errorf("Prune of orders touched another job: %+v", runs)
	}
}

// Forget removes everything of one resource (runs, pages, dead letters,
// marks, the open cycles of selections naming it) and nothing of its
// siblings; its metrics counters stay.
func forget(t *testing.T, e *env) {
	s := e.store(t)
	ctx := context.Background()
	for _, c := range []string{"shop|gone,kept", "shop|kept", "shop"} {
		if err := s.OpenCycle(ctx, c, t0); err != nil {
			t.Fatal(err)
		}
	}
	gone := startRun(t, s, contract.RunInfo{Job: "shop.gone"})
	commit(t, s, "shop.gone", fullPage(gone, "p1", "p2"))
	gone2 := startRun(t, s, contract.RunInfo{Job: "shop.gone", Kind: contract.KindReplay})
	finish(t, s, gone2, contract.RunCompleted, "")
	kept := startRun(t, s, contract.RunInfo{Job: "shop.kept"})
	commit(t, s, "shop.kept", fullPage(kept, "p1", "p2"))
	keptBefore := takeSnapshot(t, s, "shop.kept")

	n, err := s.Forget(ctx, "shop.gone")
	if err != nil || n != 2 {
		t.Fatalf("Forget = %d, %v; want 2 runs", n, err)
	}
	if js := jobState(t, s, "shop.gone"); (*js != contract.JobState{Name: "shop.gone"}) {
		t.Errorf("forgotten resource still has state: %+v", js)
	}
	if ps := pages(t, s, gone); len(ps) != 0 {
		t.Errorf("forgotten resource's pages remain: %+v", ps)
	}
	if d, err := s.DeadLetters(ctx, "shop.gone", 0); err != nil || len(d) != 0 {
		t.Errorf("forgotten resource's dead letters remain: %+v, %v", d, err)
	}
	if names, err := s.JobNames(ctx); err != nil || len(names) != 1 || names[0] != "shop.kept" {
		t.Errorf("JobNames after Forget = %v, %v", names, err)
	}
	for c, want := range map[string]bool{"shop|gone,kept": false, "shop|kept": true, "shop": true} {
		if _, open, err := s.Cycle(ctx, c); err != nil || open != want {
			t.Errorf("cycle %s open = %v, %v; want %v", c, open, err, want)
		}
	}
	if m, err := s.Metrics(ctx, "shop", "gone"); err != nil || m.Pages != 1 {
		t.Errorf("forgotten resource's metrics = %+v, %v; want kept", m, err)
	}
	sameSnapshot(t, "forgetting a sibling", keptBefore, takeSnapshot(t, s, "shop.kept"))
}

// Compact after a prune changes nothing a reader sees; Size reports the
// state's bytes.
func compact(t *testing.T, e *env) {
	s := e.store(t)
	ctx := context.Background()
	for range 20 {
		id := startRun(t, s, contract.RunInfo{Job: "orders"})
		for p := range 20 {
			commit(t, s, "orders", fullPage(id, string(rune('a'+p)), string(rune('b'+p))))
		}
		finish(t, s, id, contract.RunCompleted, "")
	}
	if s.Size(ctx) <= 0 {
		t.Errorf("Size of a state with 400 pages = %d", s.Size(ctx))
	}
	time.Sleep(20 * time.Millisecond)
	if _, err := s.Prune(ctx, "orders", time.Millisecond); err != nil {
		t.Fatal(err)
	}
	before := takeSnapshot(t, s, "orders")
	if err := s.Compact(ctx); err != nil {
		t.Fatalf("Compact: %v", err)
	}
	sameSnapshot(t, "Compact", before, takeSnapshot(t, s, "orders"))
	if err := s.Check(ctx); err != nil {
		t.Errorf("Check after Compact: %v", err)
	}
}
