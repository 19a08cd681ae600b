package sink_test

import (
	"context"
	"fmt"
	gosync "sync"
	"testing"

	idsync "github.com/idemsync/idemsync/sync"
)

// Several first runs at once create the same missing table: every one of
// them succeeds (CREATE TABLE IF NOT EXISTS alone races on the catalog and
// fails one of them with a duplicate pg_type entry).
func TestPostgresParallelCreate(t *testing.T) {
	b := newPostgresBackend(t)
	const n = 8
	for round := 0; round < 5; round++ {
		tbl := b.table(fmt.Sprintf("race_%d", round), []string{"id"},
			idsync.Column{Name: "id", Path: "id", Type: idsync.TypeInteger},
			idsync.Column{Name: "name", Path: "name", Type: idsync.TypeText})
		sinks := make([]idsync.Sink, n)
		for i := range sinks {
			sinks[i] = b.open(t)
		}
		errs := make([]error, n)
		var wg gosync.WaitGroup
		for i := range sinks {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				tb := *tbl
				errs[i] = sinks[i].Prepare(context.Background(), &tb)
			}(i)
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: prepare %d of %d parallel first runs: %v", round, i, n, err)
			}
		}
		mustUpsert(t, sinks[0], tbl, idsync.Counts{Inserted: 1}, row(int64(1), "a"))
	}
}
