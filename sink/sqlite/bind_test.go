package sqlite_test

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/idemsync/idemsync/sink/sinktest"
	"github.com/idemsync/idemsync/sink/sqlite"
)

// What a first load allocates per row written, pages of 1,000 into a
// table that starts empty (docs/performance.md, "Round five"): the
// synced-at time, the same for every row of a page, is bound once a
// statement rather than once a row, each value bound costing database/sql's
// conversion (a driver.NamedValue, 40 bytes) and the driver's copy into C
// memory. What is left: the timestamp's text and its box, the hash's box,
// database/sql's arguments and the driver's list of the texts it copied,
// once a statement. Failed first with 5.41 objects and 959 bytes per row
// (4.41 and 738 with the synced-at time bound once; 3.41 and 684 with JSON
// stored as given and a page's keys in order kept without a map).
func TestFirstLoadAllocationsPerRow(t *testing.T) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "t.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tbl := sinktest.BenchTable("", "orders")
	if err := s.Prepare(ctx, tbl); err != nil {
		t.Fatal(err)
	}
	const size = 1000
	pages := sinktest.BenchPages(12*size, size)
	// The first two pages prepare the statements; the next ten are measured.
	for _, page := range pages[:2] {
		if _, err := s.Upsert(ctx, tbl, page); err != nil {
			t.Fatal(err)
		}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, page := range pages[2:] {
		n, err := s.Upsert(ctx, tbl, page)
		if err != nil {
			t.Fatal(err)
		}
		if n.Inserted != size {
			t.Fatalf("inserted %d of a page of %d", n.Inserted, size)
		}
	}
	runtime.ReadMemStats(&after)
	rows := float64(len(pages)-2) * size
	objects := float64(after.Mallocs-before.Mallocs) / rows
	bytes := float64(after.TotalAlloc-before.TotalAlloc) / rows
	t.Logf("%.2f objects, %.0f bytes per row", objects, bytes)
	if objects > 3.45 || bytes > 760 {
		t.Errorf("%.2f objects and %.0f bytes allocated per row written, want at most 3.45 and 760", objects, bytes)
	}
}
