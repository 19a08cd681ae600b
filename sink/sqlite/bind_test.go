package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"runtime"
	"testing"
	"time"

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
	if sqlite.RaceEnabledForTest {
		t.Skip("the race detector allocates on its own")
	}
	ctx := context.Background()
	dir := t.TempDir()
	s, err := sqlite.Open(ctx, filepath.Join(dir, "t.db"), nil)
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
	// Every row of a page has the page's one synced-at time, in the
	// stored form, beside its own columns and hash.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	last := pages[11][size-1]
	var times int
	var synced, name, hash string
	if err := db.QueryRow(`SELECT count(DISTINCT _idemsync_synced_at), max(_idemsync_synced_at),
		max(name) FILTER (WHERE id = ?), max(_idemsync_hash) FILTER (WHERE id = ?)
		FROM orders WHERE id >= ?`, last.Values[0], last.Values[0], pages[11][0].Values[0]).Scan(&times, &synced, &name, &hash); err != nil {
		t.Fatal(err)
	}
	if _, err := time.Parse(time.RFC3339Nano, synced); times != 1 || err != nil || len(synced) != 30 {
		t.Errorf("the last page's rows have %d synced-at times (%q), want one in the stored form", times, synced)
	}
	if name != last.Values[1] || hash != last.Hash {
		t.Errorf("last row stored name %q hash %q, want %q and %q", name, hash, last.Values[1], last.Hash)
	}
}
