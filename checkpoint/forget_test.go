package checkpoint

import (
	"context"
	"testing"

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
