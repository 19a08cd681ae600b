package postgres_test

import (
	"context"
	"testing"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sinktest"
)

// An unchanged page is found by its keys and hashes alone, read-only,
// before the merge: its other columns are neither converted nor encoded
// nor sent (docs/performance.md, "Round five"). Failed first with 34.9
// allocations per unchanged row (the merge's arrays of every column,
// numeric through math/big), 5.98 after (the page's key dedup, the keys
// and hashes as text arrays).
func TestUnchangedPageSendsKeysOnly(t *testing.T) {
	b := newPostgresBackend(t)
	ctx := context.Background()
	page := sinktest.BenchPages(1000, 1000)[0]
	s, tbl := b.Sink(t), sinktest.BenchTable(b.Schema, "unchanged")
	sinktest.MustPrepare(t, s, tbl)
	if n, err := s.Upsert(ctx, tbl, page); err != nil || n.Inserted != 1000 {
		t.Fatalf("first load: %+v, %v", n, err)
	}
	s = b.Sink(t) // the re-sync is a later run
	sinktest.MustPrepare(t, s, tbl)
	var n contract.Counts
	var err error
	allocs := testing.AllocsPerRun(5, func() {
		if n, err = s.Upsert(ctx, tbl, page); err != nil {
			t.Fatal(err)
		}
	})
	if n.Unchanged != 1000 || n.Inserted+n.Updated+n.Dropped != 0 {
		t.Fatalf("re-sync counts %+v, want 1,000 unchanged", n)
	}
	if got := b.Rows(t, "SELECT count(*) FROM "+sinktest.QName(tbl)+" WHERE xmax <> 0"); got[0][0] != int64(0) {
		t.Errorf("%v rows locked or written by an unchanged upsert, want none", got[0][0])
	}
	if per := allocs / 1000; per > 8 {
		t.Errorf("%.2f allocations per unchanged row, want at most 8", per)
	}
}
