package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sinktest"
	"github.com/idemsync/idemsync/sink/sqlite"
)

// An unchanged page costs the query that proves it unchanged and little
// else: the query returns the rows that need a write, none here, rather
// than a row for each unchanged record, and only the key columns are
// converted before it (docs/performance.md, "Round five"). Failed first
// with 6.58 allocations per row (1.07 after).
func TestUnchangedPageAllocations(t *testing.T) {
	ctx := context.Background()
	page := sinktest.BenchPages(1000, 1000)[0]
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "t.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tbl := sinktest.BenchTable("", "unchanged")
	if err := s.Prepare(ctx, tbl); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Upsert(ctx, tbl, page); err != nil || n.Inserted != 1000 {
		t.Fatalf("first load: %+v, %v", n, err)
	}
	var n contract.Counts
	allocs := testing.AllocsPerRun(5, func() {
		if n, err = s.Upsert(ctx, tbl, page); err != nil {
			t.Fatal(err)
		}
	})
	if n.Unchanged != 1000 || n.Inserted+n.Updated+n.Dropped != 0 {
		t.Fatalf("re-sync counts %+v, want 1,000 unchanged", n)
	}
	if per := allocs / 1000; per > 1.5 {
		t.Errorf("%.2f allocations per unchanged row, want at most 1.5", per)
	}
}
