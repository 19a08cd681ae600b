package pgstate

import (
	"context"
	"strconv"
	"testing"

	"github.com/idemsync/idemsync/contract"
)

// BenchmarkCommitPage is a page's checkpoint with the lease held, as a
// run on a fenced target commits it: its cost per page beside a state
// file is what docs/performance.md ("State in PostgreSQL") measures end to
// end. A page of 1,000 keys.
func BenchmarkCommitPage(b *testing.B) {
	state := newSchema(b, nil)
	ctx := context.Background()
	s, err := Open(ctx, state, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	unlock, err := s.Lock(ctx, "orders")
	if err != nil {
		b.Fatal(err)
	}
	defer unlock()
	runID, err := s.StartRun(ctx, &contract.RunInfo{Job: "orders"})
	if err != nil {
		b.Fatal(err)
	}
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = strconv.Itoa(i)
	}
	b.ResetTimer()
	for i := range b.N {
		p := &contract.PageCommit{RunID: runID, Position: strconv.Itoa(i), Next: strconv.Itoa(i + 1), Records: 1000, Inserted: 1000, Hash: "h", Keys: keys}
		if err := s.CommitPage(ctx, "orders", p); err != nil {
			b.Fatal(err)
		}
	}
}
