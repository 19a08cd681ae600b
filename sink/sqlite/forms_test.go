package sqlite_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sinktest"
)

// Rows a BEFORE INSERT trigger drops with RAISE(IGNORE) are neither
// inserted nor unchanged: they count as Dropped.
func TestSQLiteTriggerDroppedRows(t *testing.T) {
	b := newSQLiteBackend(t)
	s, tbl := b.Sink(t), sinktest.People(b)
	sinktest.MustPrepare(t, s, tbl)
	b.Exec(t, `CREATE TRIGGER drop_some BEFORE INSERT ON people WHEN NEW.name = 'drop' BEGIN SELECT RAISE(IGNORE); END`)
	rows := []contract.Row{sinktest.Row("a", "Ann", int64(1)), sinktest.Row("b", "drop", int64(2)), sinktest.Row("c", "Cy", int64(3))}
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Inserted: 2, Dropped: 1}, rows...)
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Unchanged: 2, Dropped: 1}, rows...)
	sinktest.AssertRows(t, b.Read(t, tbl), sinktest.Want(t, tbl, rows[0], rows[2]))
	// An update a trigger drops leaves the stored row: unchanged.
	b.Exec(t, `CREATE TRIGGER keep_cy BEFORE UPDATE ON people WHEN OLD.name = 'Cy' BEGIN SELECT RAISE(IGNORE); END`)
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Updated: 1, Unchanged: 1}, sinktest.Row("a", "Ann", int64(10)), sinktest.Row("c", "Cyril", int64(3)))
	sinktest.AssertRows(t, b.Read(t, tbl), sinktest.Want(t, tbl, sinktest.Row("a", "Ann", int64(10)), rows[2]))
}

// A trigger created by another connection between two pages of one run,
// or between runs, is seen by the next page: an AFTER trigger deleting the
// rows just written leaves the insert's count as it was, so only the
// schema having changed tells the sink to look again (lookup.go,
// userTriggers). Its rows count as Dropped, not Inserted or Updated.
func TestSQLiteTriggerCreatedBetweenPages(t *testing.T) {
	b := newSQLiteBackend(t)
	s, tbl := b.Sink(t), sinktest.People(b)
	sinktest.MustPrepare(t, s, tbl)
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Inserted: 2}, sinktest.Row("a", "Ann", int64(1)), sinktest.Row("b", "Bo", int64(2)))
	b.Exec(t, `CREATE TRIGGER gone_ins AFTER INSERT ON people WHEN NEW.name = 'gone' BEGIN DELETE FROM people WHERE id = NEW.id; END`)
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Inserted: 1, Dropped: 1}, sinktest.Row("c", "Cy", int64(3)), sinktest.Row("d", "gone", int64(4)))
	// An AFTER UPDATE one, created while the sink knows of a trigger already.
	b.Exec(t, `CREATE TRIGGER gone_upd AFTER UPDATE ON people WHEN NEW.name = 'gone' BEGIN DELETE FROM people WHERE id = NEW.id; END`)
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Updated: 1, Dropped: 1}, sinktest.Row("a", "Ann", int64(10)), sinktest.Row("b", "gone", int64(2)))
	// Dropped by hand, the triggers delete nothing more.
	b.Exec(t, `DROP TRIGGER gone_ins`)
	b.Exec(t, `DROP TRIGGER gone_upd`)
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Inserted: 1}, sinktest.Row("e", "gone", int64(5)))
	// Between runs: the next run's Prepare, on the same sink (serve) and on another.
	b.Exec(t, `CREATE TRIGGER gone_ins AFTER INSERT ON people WHEN NEW.name = 'gone' BEGIN DELETE FROM people WHERE id = NEW.id; END`)
	sinktest.MustPrepare(t, s, tbl)
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Inserted: 1, Dropped: 1}, sinktest.Row("f", "Fay", int64(6)), sinktest.Row("g", "gone", int64(7)))
	s.Close()
	b.Exec(t, `DROP TRIGGER gone_ins`)
	s = b.Sink(t)
	sinktest.MustPrepare(t, s, tbl)
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Inserted: 1}, sinktest.Row("h", "Hal", int64(8)))
	b.Exec(t, `CREATE TRIGGER gone_ins AFTER INSERT ON people WHEN NEW.name = 'gone' BEGIN DELETE FROM people WHERE id = NEW.id; END`)
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Inserted: 1, Dropped: 1}, sinktest.Row("i", "Ivy", int64(9)), sinktest.Row("j", "gone", int64(10)))
	sinktest.AssertRows(t, b.Read(t, tbl), sinktest.Want(t, tbl, sinktest.Row("a", "Ann", int64(10)), sinktest.Row("c", "Cy", int64(3)),
		sinktest.Row("e", "gone", int64(5)), sinktest.Row("f", "Fay", int64(6)), sinktest.Row("h", "Hal", int64(8)), sinktest.Row("i", "Ivy", int64(9))))
}

// Stored forms that keep SQL comparisons right: timestamps in one
// fixed-width UTC form (text order is time order), JSON compact, reals and
// integers as numbers.
func TestSQLiteStoredForms(t *testing.T) {
	b := newSQLiteBackend(t)
	s := b.Sink(t)
	tbl := b.Table("forms", []string{"id"}, sinktest.Col("id", contract.TypeInteger), sinktest.Col("ts", contract.TypeTimestamp),
		sinktest.Col("j", contract.TypeJSON), sinktest.Col("price", contract.TypeReal))
	sinktest.MustPrepare(t, s, tbl)
	at := func(sec, nsec int) time.Time { return time.Date(2024, 1, 1, 10, 0, sec, nsec, time.UTC) }
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Inserted: 3},
		sinktest.Row(int64(1), at(1, 500000000), "{ \"a\" : [1, 2],\n  \"b\": {\"c\": \"d e\"} }", 500.25),
		sinktest.Row(int64(2), at(1, 0), `[ ]`, 99.5),
		sinktest.Row(int64(3), at(0, 999999999), `"x y"`, 1000.0))
	got := b.Rows(t, `SELECT id, ts, j, typeof(price) FROM forms ORDER BY ts`)
	want := "[[3 2024-01-01T10:00:00.999999999Z \"x y\" real] " +
		"[2 2024-01-01T10:00:01.000000000Z [] real] " +
		"[1 2024-01-01T10:00:01.500000000Z {\"a\":[1,2],\"b\":{\"c\":\"d e\"}} real]]"
	if fmt.Sprint(got) != want {
		t.Errorf("stored\n got %v\nwant %s", got, want)
	}
	if n := b.Rows(t, `SELECT count(*) FROM forms WHERE price > 500`); fmt.Sprint(n) != "[[2]]" {
		t.Errorf("price > 500: %v rows, want 2", n)
	}
	if n := b.Rows(t, `SELECT count(*) FROM forms WHERE ts > '2024-01-01T10:00:01'`); fmt.Sprint(n) != "[[2]]" {
		t.Errorf("ts after 10:00:01: %v rows, want 2", n)
	}
	for _, st := range b.Rows(t, `SELECT DISTINCT length(_idemsync_synced_at) FROM forms`) {
		if fmt.Sprint(st) != "[30]" {
			t.Errorf("synced_at length %v, want 30 (fixed width)", st)
		}
	}
}

// A table written in the earlier forms (timestamps with as few fractional
// digits as needed) is neither rewritten by a re-sync of unchanged records
// nor confused by them: the version guard compares instants, not text.
func TestSQLiteEarlierForms(t *testing.T) {
	b := newSQLiteBackend(t)
	s := b.Sink(t)
	tbl := b.Table("old", []string{"id"}, sinktest.Col("id", contract.TypeText), sinktest.Col("v", contract.TypeText),
		sinktest.Col("at", contract.TypeTimestamp), sinktest.Col("n", contract.TypeNumeric))
	tbl.Version = "at"
	sinktest.MustPrepare(t, s, tbl)
	at := func(sec, nsec int) time.Time { return time.Date(2024, 1, 1, 10, 0, sec, nsec, time.UTC) }
	a, c := sinktest.Row("a", "v1", at(0, 500000000), "9"), sinktest.Row("c", "v1", at(2, 0), "9")
	for _, r := range []contract.Row{a, c} {
		b.Exec(t, fmt.Sprintf(`INSERT INTO old (id, v, at, n, _idemsync_hash, _idemsync_synced_at) VALUES ('%s', 'v1', '%s', '9', '%s', '2024-01-01T00:00:00Z')`,
			r.Values[0], r.Values[2].(time.Time).Format(time.RFC3339Nano), r.Hash))
	}
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Unchanged: 2}, a, c)
	if got := b.Rows(t, `SELECT DISTINCT _idemsync_synced_at FROM old`); fmt.Sprint(got) != "[[2024-01-01T00:00:00Z]]" {
		t.Errorf("unchanged rows rewritten: synced_at %v", got)
	}
	// "…00.5Z" stored; "…00.500000000Z" is the same instant (>=: written),
	// "…00Z" is older (not written) although it sorts after as text.
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Updated: 1, Unchanged: 1}, sinktest.Row("a", "v2", at(0, 500000000), "9"), sinktest.Row("c", "stale", at(1, 999999999), "9"))
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Unchanged: 1}, sinktest.Row("a", "stale", at(0, 0), "9"))
	got := b.Rows(t, `SELECT id, v FROM old ORDER BY id`)
	if fmt.Sprint(got) != "[[a v2] [c v1]]" {
		t.Errorf("rows %v, want a v2 and c v1", got)
	}
}

// A numeric version column stored as exact text compares by value: 10 is
// newer than 9.
func TestSQLiteNumericVersion(t *testing.T) {
	b := newSQLiteBackend(t)
	s := b.Sink(t)
	tbl := b.Table("numver", []string{"id"}, sinktest.Col("id", contract.TypeText), sinktest.Col("rev", contract.TypeNumeric))
	tbl.Version = "rev"
	sinktest.MustPrepare(t, s, tbl)
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Inserted: 1}, sinktest.Row("a", "9"))
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Updated: 1}, sinktest.Row("a", "10"))
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Unchanged: 1}, sinktest.Row("a", "9.5"))
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Updated: 1}, sinktest.Row("a", "10.00"))
	got := b.Rows(t, `SELECT rev FROM numver`)
	if fmt.Sprint(got) != "[[10.00]]" {
		t.Errorf("rev %v, want 10.00", got)
	}
}

// Keys written in the earlier forms (a timestamp with as few fractional
// digits as needed, a numeric as given) are brought to the current form
// when the table is prepared, so a re-sync finds their rows instead of
// adding a second row for the same key.
func TestSQLiteEarlierKeyForms(t *testing.T) {
	b := newSQLiteBackend(t)
	tbl := b.Table("oldkeys", []string{"at", "n"}, sinktest.Col("at", contract.TypeTimestamp), sinktest.Col("n", contract.TypeNumeric),
		sinktest.Col("v", contract.TypeText))
	b.Exec(t, `CREATE TABLE oldkeys (at TEXT NOT NULL, n TEXT NOT NULL, v TEXT, _idemsync_hash TEXT, _idemsync_synced_at TEXT, PRIMARY KEY (at, n))`)
	at := func(sec, nsec int) time.Time { return time.Date(2024, 1, 1, 10, 0, sec, nsec, time.UTC) }
	old := []contract.Row{sinktest.Row(at(0, 500000000), "1.50", "a"), sinktest.Row(at(1, 0), "2", "b"), sinktest.Row(at(2, 0), "1e1", "c"), sinktest.Row(at(3, 0), "7", "d")}
	for _, r := range old {
		b.Exec(t, fmt.Sprintf(`INSERT INTO oldkeys VALUES ('%s', '%s', '%s', '%s', '2024-01-01T00:00:00Z')`,
			r.Values[0].(time.Time).Format(time.RFC3339Nano), r.Values[1], r.Values[2], r.Hash))
	}
	// A value-duplicate an earlier version let in: kept, not merged.
	b.Exec(t, `INSERT INTO oldkeys VALUES ('2024-01-01T10:00:03Z', '7.0', 'dup', 'x', '2024-01-01T00:00:00Z')`)
	s := b.Sink(t)
	sinktest.MustPrepare(t, s, tbl)
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Unchanged: 3, Updated: 1}, old[0], old[1], old[2], sinktest.Row(at(3, 0), "7", "d2"))
	got := b.Rows(t, `SELECT at, n, v FROM oldkeys ORDER BY at, n`)
	want := "[[2024-01-01T10:00:00.500000000Z 1.5 a] [2024-01-01T10:00:01.000000000Z 2 b] " +
		"[2024-01-01T10:00:02.000000000Z 10 c] [2024-01-01T10:00:03.000000000Z 7 d2] [2024-01-01T10:00:03.000000000Z 7.0 dup]]"
	if fmt.Sprint(got) != want {
		t.Errorf("rows\n got %v\nwant %s", got, want)
	}
}
