package sqlite_test

import (
	"context"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sinktest"
)

// A key column the user declared COLLATE NOCASE: the upsert writes "BOB"
// over "Bob" (one row, as the unique key compares them), and the sweep
// must match the seen key "BOB" to that row the same way, not delete it.
func TestSweepKeyCollation(t *testing.T) {
	ctx := context.Background()
	b := newSQLiteBackend(t)
	s := b.Sink(t)
	tbl := b.Table("people", []string{"id"}, sinktest.Col("id", contract.TypeText), sinktest.Col("v", contract.TypeText))
	tbl.Create, tbl.Deletes = false, contract.DeletesHard
	b.Exec(t, `CREATE TABLE people (id TEXT PRIMARY KEY, v TEXT, _idemsync_hash TEXT, _idemsync_synced_at TEXT)`)
	sinktest.MustPrepare(t, s, tbl)
	// Prepare refuses such a key (checkKeyCollation): the collation comes by hand after it.
	b.Exec(t, `DROP TABLE people`)
	b.Exec(t, `CREATE TABLE people (id TEXT COLLATE NOCASE PRIMARY KEY, v TEXT, _idemsync_hash TEXT, _idemsync_synced_at TEXT)`)
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Inserted: 2}, sinktest.Row("Bob", "1"), sinktest.Row("Ann", "1"))
	seen := []contract.Row{sinktest.Row("BOB", "2"), sinktest.Row("ann", "2")}
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Updated: 2}, seen...)
	sw := s.(contract.Sweeper)
	keys, err := sw.KeyForms(ctx, tbl, seen)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sw.Sweep(ctx, tbl, contract.SweepRequest{Mode: contract.DeletesHard, MaxRatio: 1, Keys: func(fn func(string) error) error {
		for _, k := range keys {
			if err := fn(k); err != nil {
				return err
			}
		}
		return nil
	}})
	if err != nil || res.Deleted != 0 {
		t.Fatalf("sweep: %+v, %v; want nothing deleted (both rows were seen)", res, err)
	}
	if got := b.Rows(t, `SELECT count(*) FROM people`); got[0][0] != int64(2) {
		t.Errorf("rows left: %v, want 2", got[0][0])
	}
}

// A parent table the user created with a column named in other case
// ("ID"): SQLite names columns case-insensitively, and so does ParentRows.
func TestParentRowsColumnCase(t *testing.T) {
	b := newSQLiteBackend(t)
	s := b.Sink(t)
	b.Exec(t, `CREATE TABLE orders (ID INTEGER PRIMARY KEY, _idemsync_hash TEXT, _idemsync_synced_at TEXT)`)
	b.Exec(t, `INSERT INTO orders (ID) VALUES (2), (1)`)
	tbl := b.Table("orders", []string{"id"}, sinktest.Col("id", contract.TypeInteger))
	rows, err := s.(contract.ParentReader).ParentRows(context.Background(), tbl, []string{"id"}, contract.ParentFilter{})
	if err != nil || len(rows) != 2 || *rows[0][0] != "1" {
		t.Fatalf("ParentRows: %v, %v; want the two rows by key", rows, err)
	}
}

// Keys that differ only in case in one page, in a COLLATE NOCASE key
// column: SQLite writes them one after the other into the one row its
// unique key sees (the last wins), where PostgreSQL refuses the page with
// an error naming the column (postgres' TestKeyCaseInsensitiveNamesColumn).
func TestKeyCaseInsensitiveOnePage(t *testing.T) {
	b := newSQLiteBackend(t)
	s := b.Sink(t)
	tbl := b.Table("people", []string{"id"}, sinktest.Col("id", contract.TypeText), sinktest.Col("v", contract.TypeText))
	tbl.Create = false
	b.Exec(t, `CREATE TABLE people (id TEXT PRIMARY KEY, v TEXT, _idemsync_hash TEXT, _idemsync_synced_at TEXT)`)
	sinktest.MustPrepare(t, s, tbl)
	// Prepare refuses such a key (checkKeyCollation): the collation comes by hand after it.
	b.Exec(t, `DROP TABLE people`)
	b.Exec(t, `CREATE TABLE people (id TEXT COLLATE NOCASE PRIMARY KEY, v TEXT, _idemsync_hash TEXT, _idemsync_synced_at TEXT)`)
	if _, err := s.Upsert(context.Background(), tbl, []contract.Row{sinktest.Row("Bob", "1"), sinktest.Row("Ann", "1"), sinktest.Row("BOB", "2")}); err != nil {
		t.Fatal(err)
	}
	got := b.Rows(t, `SELECT id, v FROM people ORDER BY id`)
	if len(got) != 2 || got[1][1] != "2" {
		t.Errorf("rows %v, want Ann and one Bob row holding the last value 2", got)
	}
}

// Under COLLATE NOCASE two recorded keys ("BOB", "bob") may name one row,
// so the pass's distinct keys matching the live rows in number does not
// mean every live row was seen: the sweep loads the keys and removes the
// row no key names (contract.SweepRequest.SeenLive), also when the pass's
// tally of live rows (LiveTally) stands for the count.
func TestSweepSeenLiveUnderCollation(t *testing.T) {
	ctx := context.Background()
	b := newSQLiteBackend(t)
	s := b.Sink(t)
	tbl := b.Table("people", []string{"id"}, sinktest.Col("id", contract.TypeText), sinktest.Col("v", contract.TypeText))
	tbl.Create, tbl.Deletes = false, contract.DeletesHard
	b.Exec(t, `CREATE TABLE people (id TEXT PRIMARY KEY, v TEXT, _idemsync_hash TEXT, _idemsync_synced_at TEXT)`)
	sinktest.MustPrepare(t, s, tbl)
	// Prepare refuses such a key (checkKeyCollation): the collation comes by hand after it.
	b.Exec(t, `DROP TABLE people`)
	b.Exec(t, `CREATE TABLE people (id TEXT COLLATE NOCASE PRIMARY KEY, v TEXT, _idemsync_hash TEXT, _idemsync_synced_at TEXT)`)
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Inserted: 2}, sinktest.Row("Bob", "1"), sinktest.Row("gone", "1"))
	time.Sleep(3 * time.Millisecond) // the prior pass starts after the rows were written
	prior := time.Now()
	seen := []contract.Row{sinktest.Row("BOB", "1"), sinktest.Row("bob", "1")}
	sw := s.(contract.Sweeper)
	keys, err := sw.KeyForms(ctx, tbl, seen)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sw.Sweep(ctx, tbl, contract.SweepRequest{Mode: contract.DeletesHard, MaxRatio: 1, LiveBefore: -1, SeenLive: 2, LiveTally: 2,
		Keys:  func(fn func(string) error) error { return each(keys, fn) },
		Prior: func(fn func(string) error) error { return nil }, PriorStart: prior, PriorLiveBefore: -1})
	if err != nil || res.Deleted != 1 {
		t.Fatalf("sweep: %+v, %v; want the row no key names removed", res, err)
	}
	if got := b.Rows(t, `SELECT id FROM people`); len(got) != 1 || got[0][0] != "Bob" {
		t.Errorf("rows left: %v, want Bob", got)
	}
}

func each(keys []string, fn func(string) error) error {
	for _, k := range keys {
		if err := fn(k); err != nil {
			return err
		}
	}
	return nil
}
