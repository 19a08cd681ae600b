package checkpoint

import (
	"context"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
)

// TestResourceStateNames: a resource's state is keyed job.resource, which
// the store accepts and keeps apart from the job's own name.
func TestResourceStateNames(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	for _, name := range []string{"shop.orders", "shop.order_items", "shop"} {
		id := startRun(t, s, contract.RunInfo{Job: name, Kind: contract.KindRun})
		commit(t, s, name, contract.PageCommit{RunID: id, Position: "{}", Next: `{"page":2}`, Records: 1, Hash: name})
	}
	for _, bad := range []string{"shop.", ".orders", "a.b.c", "shop/orders"} {
		if _, err := s.Lock(ctx, bad); err == nil {
			t.Errorf("Lock(%q) accepted a name that is neither a job nor job.resource", bad)
		}
	}
	names, err := s.JobNames(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 3 {
		t.Fatalf("job names %v, want 3", names)
	}
}

// TestForgetRemovesOneResource: Forget removes a removed resource's runs,
// pages and dead letters and nothing of its siblings.
func TestForgetRemovesOneResource(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	gone := startRun(t, s, contract.RunInfo{Job: "shop.gone", Kind: contract.KindRun})
	if err := s.OpenCycle(ctx, "shop|gone,kept", time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := s.OpenCycle(ctx, "shop|kept", time.Now()); err != nil {
		t.Fatal(err)
	}
	commit(t, s, "shop.gone", contract.PageCommit{RunID: gone, Position: "{}", Next: `{"page":2}`, Records: 1, Hash: "a",
		Dead: []contract.DeadLetter{{Index: 0, Reason: "bad", Raw: "{}"}}})
	kept := startRun(t, s, contract.RunInfo{Job: "shop.kept", Kind: contract.KindRun})
	commit(t, s, "shop.kept", contract.PageCommit{RunID: kept, Position: "{}", Next: `{"page":2}`, Records: 1, Hash: "b"})

	n, err := s.Forget(ctx, "shop.gone")
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("Forget removed %d runs, want 1", n)
	}
	js, err := s.Job(ctx, "shop.gone")
	if err != nil {
		t.Fatal(err)
	}
	if js.LastRun != nil || js.DeadLetters != 0 {
		t.Errorf("forgotten resource still has state: last run %v, %d dead letters", js.LastRun, js.DeadLetters)
	}
	if _, open, _ := s.Cycle(ctx, "shop|gone,kept"); open {
		t.Error("a cycle of a selection naming the forgotten resource stays")
	}
	if _, open, _ := s.Cycle(ctx, "shop|kept"); !open {
		t.Error("a cycle not naming the forgotten resource was removed")
	}
	if pages, _ := s.Pages(ctx, gone); len(pages) != 0 {
		t.Errorf("forgotten resource's pages remain: %d", len(pages))
	}
	js, err = s.Job(ctx, "shop.kept")
	if err != nil {
		t.Fatal(err)
	}
	if js.LastRun == nil || js.LastRun.ID != kept {
		t.Errorf("sibling lost its run: %+v", js.LastRun)
	}
	if pages, _ := s.Pages(ctx, kept); len(pages) != 1 {
		t.Errorf("sibling's pages: %d, want 1", len(pages))
	}
}
