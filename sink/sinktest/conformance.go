package sinktest

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

// conformanceCases are the writes every sink makes alike.
func conformanceCases() []testCase {
	ctx := context.Background()
	return []testCase{
		{"insert", func(t *testing.T, b *DB) {
			s, tbl := b.Sink(t), People(b)
			MustPrepare(t, s, tbl)
			rows := []contract.Row{Row("a", "Ann", int64(30)), Row("b", "Bob", int64(40)), Row("c", "Cy", int64(50))}
			MustUpsert(t, s, tbl, contract.Counts{Inserted: 3}, rows...)
			AssertRows(t, b.Read(t, tbl), Want(t, tbl, rows...))
		}},
		{"large page", func(t *testing.T, b *DB) {
			// Crosses the batched insert and lookup sizes, with a remainder,
			// then mixes updates, unchanged rows and new rows in one page.
			s, tbl := b.Sink(t), People(b)
			MustPrepare(t, s, tbl)
			var first, second []contract.Row
			for i := range 937 {
				first = append(first, Row(fmt.Sprintf("k%04d", i), "n", int64(i)))
			}
			MustUpsert(t, s, tbl, contract.Counts{Inserted: 937}, first...)
			for i := range 1001 {
				age := int64(i)
				if i%3 == 0 {
					age = -age - 1 // changed
				}
				second = append(second, Row(fmt.Sprintf("k%04d", i), "n", age))
			}
			MustUpsert(t, s, tbl, contract.Counts{Inserted: 64, Updated: 313, Unchanged: 624}, second...)
			AssertRows(t, b.Read(t, tbl), Want(t, tbl, second...))
		}},
		{"update", func(t *testing.T, b *DB) {
			s, tbl := b.Sink(t), People(b)
			MustPrepare(t, s, tbl)
			MustUpsert(t, s, tbl, contract.Counts{Inserted: 3},
				Row("a", "Ann", int64(30)), Row("b", "Bob", int64(40)), Row("c", "Cy", int64(50)))
			before := syncedAt(t, b, tbl)
			time.Sleep(5 * time.Millisecond)
			rows := []contract.Row{Row("a", "Ann", int64(31)), Row("b", "Bob", int64(40)), Row("c", "Cyril", int64(50))}
			MustUpsert(t, s, tbl, contract.Counts{Updated: 2, Unchanged: 1}, rows...)
			AssertRows(t, b.Read(t, tbl), Want(t, tbl, rows...))
			after := syncedAt(t, b, tbl)
			if after[0] == before[0] || after[2] == before[2] || after[1] != before[1] {
				t.Errorf("synced_at before %v after %v: want only rows a and c rewritten", before, after)
			}
		}},
		{"unchanged", func(t *testing.T, b *DB) {
			s, tbl := b.Sink(t), People(b)
			MustPrepare(t, s, tbl)
			rows := []contract.Row{Row("a", "Ann", int64(30)), Row("b", "Bob", nil)}
			MustUpsert(t, s, tbl, contract.Counts{Inserted: 2}, rows...)
			before := syncedAt(t, b, tbl)
			time.Sleep(5 * time.Millisecond)
			MustUpsert(t, s, tbl, contract.Counts{Unchanged: 2}, rows...)
			if after := syncedAt(t, b, tbl); strings.Join(after, ",") != strings.Join(before, ",") {
				t.Errorf("synced_at rewritten by an unchanged upsert: %v -> %v", before, after)
			}
			AssertRows(t, b.Read(t, tbl), Want(t, tbl, rows...))
		}},
		{"duplicate keys in one page", func(t *testing.T, b *DB) {
			s, tbl := b.Sink(t), People(b)
			MustPrepare(t, s, tbl)
			MustUpsert(t, s, tbl, contract.Counts{Inserted: 2, Unchanged: 2},
				Row("a", "first", int64(1)), Row("b", "Bob", int64(2)), Row("a", "second", int64(3)), Row("a", "last", int64(4)))
			AssertRows(t, b.Read(t, tbl), Want(t, tbl, Row("a", "last", int64(4)), Row("b", "Bob", int64(2))))
			// Duplicates of an existing key: one update, the rest unchanged.
			MustUpsert(t, s, tbl, contract.Counts{Updated: 1, Unchanged: 2},
				Row("b", "x", int64(2)), Row("b", "y", int64(2)), Row("b", "Bobby", int64(2)))
			AssertRows(t, b.Read(t, tbl), Want(t, tbl, Row("a", "last", int64(4)), Row("b", "Bobby", int64(2))))
		}},
		{"composite key", func(t *testing.T, b *DB) {
			s := b.Sink(t)
			tbl := b.Table("orders", []string{"tenant", "id"},
				Col("tenant", contract.TypeText), Col("id", contract.TypeInteger), Col("total", contract.TypeNumeric))
			MustPrepare(t, s, tbl)
			MustUpsert(t, s, tbl, contract.Counts{Inserted: 3},
				Row("t1", int64(1), "1.00"), Row("t2", int64(1), "2.00"), Row("t1", int64(2), "3.00"))
			MustUpsert(t, s, tbl, contract.Counts{Updated: 1, Unchanged: 1, Inserted: 1},
				Row("t2", int64(1), "2.50"), Row("t1", int64(1), "1.00"), Row("t2", int64(2), "4.00"))
			AssertRows(t, b.Read(t, tbl), Want(t, tbl,
				Row("t1", int64(1), "1.00"), Row("t1", int64(2), "3.00"), Row("t2", int64(1), "2.50"), Row("t2", int64(2), "4.00")))
		}},
		{"every column type", func(t *testing.T, b *DB) {
			s := b.Sink(t)
			tbl := b.Table("types", []string{"id"},
				Col("id", contract.TypeInteger), Col("t", contract.TypeText), Col("i", contract.TypeInteger),
				Col("r", contract.TypeReal), Col("n", contract.TypeNumeric), Col("b", contract.TypeBoolean),
				Col("ts", contract.TypeTimestamp), Col("j", contract.TypeJSON))
			MustPrepare(t, s, tbl)
			ist := time.FixedZone("IST", 5*3600+1800)
			pst := time.FixedZone("PST", -8*3600)
			rows := []contract.Row{
				Row(int64(1), "héllo 🌍 \"quoted\" 'single'\nnew line", int64(math.MaxInt64), 0.1,
					"12345678901234567890.123456789", true,
					time.Date(2024, 5, 1, 17, 30, 0, 123456000, ist), `{"a":[1,2,{"b":null}],"ü":"✓"}`),
				Row(int64(2), "", int64(math.MinInt64), -1.5e300, "-0.000000000000000000001", false,
					time.Date(2023, 12, 31, 16, 0, 0, 0, pst), `[]`),
				Row(int64(3), "x", int64(0), 0.0, "12.50", true, time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), `"text"`),
			}
			MustUpsert(t, s, tbl, contract.Counts{Inserted: 3}, rows...)
			AssertRows(t, b.Read(t, tbl), Want(t, tbl, rows...))
			// Exact numerics and the stored instant, read raw.
			numExpr, tsExpr := sqlkit.QuoteIdent("n"), sqlkit.QuoteIdent("ts")
			numExpr = b.asText(numExpr)
			raw := b.Rows(t, "SELECT "+numExpr+", "+tsExpr+" FROM "+QName(tbl)+" ORDER BY "+sqlkit.QuoteIdent("id"))
			for i, wantNum := range []string{"12345678901234567890.123456789", "-0.000000000000000000001", "12.50"} {
				if raw[i][0] != wantNum {
					t.Errorf("row %d numeric = %#v, want %q exactly", i, raw[i][0], wantNum)
				}
				var got time.Time
				switch x := raw[i][1].(type) {
				case time.Time:
					got = x
				case string:
					got, _ = time.Parse(time.RFC3339Nano, x)
					if !strings.HasSuffix(x, "Z") {
						t.Errorf("row %d timestamp %q not stored in UTC", i, x)
					}
				}
				if wantTS := rows[i].Values[6].(time.Time); !got.Equal(wantTS) {
					t.Errorf("row %d timestamp = %v, want instant %v", i, got, wantTS)
				}
			}
			// The same values again change nothing.
			MustUpsert(t, s, tbl, contract.Counts{Unchanged: 3}, rows...)
		}},
		{"null values", func(t *testing.T, b *DB) {
			s := b.Sink(t)
			tbl := b.Table("nulls", []string{"id"},
				Col("id", contract.TypeText), Col("t", contract.TypeText), Col("i", contract.TypeInteger),
				Col("r", contract.TypeReal), Col("n", contract.TypeNumeric), Col("b", contract.TypeBoolean),
				Col("ts", contract.TypeTimestamp), Col("j", contract.TypeJSON))
			MustPrepare(t, s, tbl)
			empty := Row("a", nil, nil, nil, nil, nil, nil, nil)
			MustUpsert(t, s, tbl, contract.Counts{Inserted: 1}, empty)
			AssertRows(t, b.Read(t, tbl), Want(t, tbl, empty))
			full := Row("a", "x", int64(1), 1.5, "1", false, time.Unix(0, 0), `null`)
			MustUpsert(t, s, tbl, contract.Counts{Updated: 1}, full)
			AssertRows(t, b.Read(t, tbl), Want(t, tbl, full))
			MustUpsert(t, s, tbl, contract.Counts{Updated: 1}, empty)
			AssertRows(t, b.Read(t, tbl), Want(t, tbl, empty))
		}},
		{"odd identifiers", func(t *testing.T, b *DB) {
			s := b.Sink(t)
			tbl := b.Table(`we"ird tab🙂le`, []string{"id key"},
				Col("id key", contract.TypeText), Col(`quo"te`, contract.TypeText), Col("ünïcødé", contract.TypeInteger),
				Col("select", contract.TypeBoolean), Col("semi;colon--", contract.TypeText), Col("Mixed Case", contract.TypeText))
			MustPrepare(t, s, tbl)
			rows := []contract.Row{Row("k'1", `v"1`, int64(1), true, "x; DROP TABLE x; --", "M")}
			MustUpsert(t, s, tbl, contract.Counts{Inserted: 1}, rows...)
			MustPrepare(t, s, tbl) // idempotent on an existing odd table
			rows[0] = Row("k'1", `v"2`, int64(1), true, "x; DROP TABLE x; --", "M")
			MustUpsert(t, s, tbl, contract.Counts{Updated: 1}, rows...)
			AssertRows(t, b.Read(t, tbl), Want(t, tbl, rows...))
		}},
		{"schema", func(t *testing.T, b *DB) {
			s := b.Sink(t)
			if !b.Schemas {
				tbl := People(b)
				tbl.Schema = "main"
				MustPrepare(t, s, tbl)
				MustUpsert(t, s, tbl, contract.Counts{Inserted: 1}, Row("a", "Ann", nil))
				tbl.Schema = "other"
				err := s.Prepare(ctx, tbl)
				if code := contract.ClassOf(err); code != contract.Invalid {
					t.Fatalf("schema other: exit %d (%v), want %d", code, err, contract.Invalid)
				}
				return
			}
			// A schema with an odd name.
			odd := `Odd "Schéma" ` + RandomHex(3)
			b.Exec(t, "CREATE SCHEMA "+sqlkit.QuoteIdent(odd))
			t.Cleanup(func() { b.Exec(t, "DROP SCHEMA "+sqlkit.QuoteIdent(odd)+" CASCADE") })
			tbl := People(b)
			tbl.Schema = odd
			MustPrepare(t, s, tbl)
			MustUpsert(t, s, tbl, contract.Counts{Inserted: 1}, Row("a", "Ann", nil))
			AssertRows(t, b.Read(t, tbl), Want(t, tbl, Row("a", "Ann", nil)))
			// No schema: the search_path (public), with a name no other test uses.
			plain := People(b)
			plain.Schema, plain.Name = "", "people_"+RandomHex(4)
			t.Cleanup(func() { b.Exec(t, "DROP TABLE IF EXISTS "+QName(plain)) })
			MustPrepare(t, s, plain)
			MustUpsert(t, s, plain, contract.Counts{Inserted: 1}, Row("b", "Bob", nil))
			AssertRows(t, b.Read(t, plain), Want(t, plain, Row("b", "Bob", nil)))
			// A missing schema is an error that says how to create it.
			missing := People(b)
			missing.Schema = "no_such_schema_" + RandomHex(4)
			err := s.Prepare(ctx, missing)
			if code := contract.ClassOf(err); code != contract.Permanent || !strings.Contains(contract.Hint(err), "CREATE SCHEMA") {
				t.Fatalf("missing schema: exit %d, hint %q (%v)", code, contract.Hint(err), err)
			}
		}},
		{"existing table without a unique key", func(t *testing.T, b *DB) {
			s, tbl := b.Sink(t), People(b)
			b.Exec(t, "CREATE TABLE "+QName(tbl)+` (id TEXT, name TEXT, age INTEGER)`)
			err := s.Prepare(ctx, tbl)
			if code := contract.ClassOf(err); code != contract.Permanent {
				t.Fatalf("exit %d (%v), want %d", code, err, contract.Permanent)
			}
			hint := contract.Hint(err)
			wantSQL := b.UniqueFix
			if !strings.Contains(hint, wantSQL) || !strings.Contains(hint, QName(tbl)) {
				t.Fatalf("hint %q: want the %s statement for %s", hint, wantSQL, QName(tbl))
			}
			// The hinted statement is the fix.
			_, stmt, _ := strings.Cut(hint, "run: ")
			b.Exec(t, stmt)
			MustPrepare(t, s, tbl)
			MustUpsert(t, s, tbl, contract.Counts{Inserted: 1}, Row("a", "Ann", int64(1)))
			AssertRows(t, b.Read(t, tbl), Want(t, tbl, Row("a", "Ann", int64(1))))
		}},
		{"unique key on other columns", func(t *testing.T, b *DB) {
			s, tbl := b.Sink(t), People(b)
			b.Exec(t, "CREATE TABLE "+QName(tbl)+` (id TEXT, name TEXT, age INTEGER, UNIQUE (id, name))`)
			if code := contract.ClassOf(s.Prepare(ctx, tbl)); code != contract.Permanent {
				t.Fatalf("unique (id, name) accepted for key (id): exit %d", code)
			}
		}},
		{"existing table with its own key and columns", func(t *testing.T, b *DB) {
			s := b.Sink(t)
			tbl := b.Table("own", []string{"id"}, Col("id", contract.TypeInteger), Col("name", contract.TypeText))
			b.Exec(t, "CREATE TABLE "+QName(tbl)+` (id INTEGER PRIMARY KEY, name TEXT, note TEXT NOT NULL DEFAULT 'kept')`)
			MustPrepare(t, s, tbl)
			MustUpsert(t, s, tbl, contract.Counts{Inserted: 2}, Row(int64(1), "a"), Row(int64(2), "b"))
			MustUpsert(t, s, tbl, contract.Counts{Updated: 1, Unchanged: 1}, Row(int64(1), "A"), Row(int64(2), "b"))
			AssertRows(t, b.Read(t, tbl), Want(t, tbl, Row(int64(1), "A"), Row(int64(2), "b")))
			if got := b.Rows(t, "SELECT note FROM "+QName(tbl)); len(got) != 2 || got[0][0] != "kept" {
				t.Errorf("user column note = %v, want kept", got)
			}
		}},
		{"missing table without create", func(t *testing.T, b *DB) {
			s, tbl := b.Sink(t), People(b)
			tbl.Create = false
			err := s.Prepare(ctx, tbl)
			if code := contract.ClassOf(err); code != contract.Permanent || !strings.Contains(err.Error(), "does not exist") {
				t.Fatalf("exit %d (%v), want %d and 'does not exist'", code, err, contract.Permanent)
			}
		}},
		{"column added by a later prepare", func(t *testing.T, b *DB) {
			s, tbl := b.Sink(t), People(b)
			MustPrepare(t, s, tbl)
			a0, b0 := Row("a", "Ann", int64(1)), Row("b", "Bob", int64(2))
			MustUpsert(t, s, tbl, contract.Counts{Inserted: 2}, a0, b0)
			wider := People(b)
			wider.Columns = append(wider.Columns, Col("email", contract.TypeText), Col("since", contract.TypeTimestamp))
			MustPrepare(t, s, wider)
			c := Row("c", "Cy", int64(3), "c@example.com", time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC))
			MustUpsert(t, s, wider, contract.Counts{Inserted: 1}, c)
			// Earlier rows keep their values (and hash); the new columns are NULL.
			AssertRows(t, b.Read(t, wider), Want(t, wider,
				contract.Row{Values: append(a0.Values, nil, nil), Hash: a0.Hash},
				contract.Row{Values: append(b0.Values, nil, nil), Hash: b0.Hash}, c))
			a := Row("a", "Ann", int64(1), "a@example.com", nil)
			MustUpsert(t, s, wider, contract.Counts{Updated: 1}, a)
			// A new sink on the same table sees the same columns.
			MustPrepare(t, b.Sink(t), wider)
		}},
		{"inferred column widened in the page's write", func(t *testing.T, b *DB) {
			// docs/job-file.md, "Without columns": the engine widens an
			// inferred column (Column.Was set); the upsert changes its type
			// in its own transaction and every stored value keeps its value.
			s := b.Sink(t)
			narrow := b.Table("widened", []string{"id"},
				Col("id", contract.TypeText), Col("n", contract.TypeInteger), Col("f", contract.TypeBoolean), Col("j", contract.TypeInteger))
			MustPrepare(t, s, narrow)
			a0, b0 := Row("a", int64(9007199254740993), true, int64(7)), Row("b", int64(5), false, nil)
			MustUpsert(t, s, narrow, contract.Counts{Inserted: 2}, a0, b0)
			wide := b.Table("widened", []string{"id"}, Col("id", contract.TypeText),
				contract.Column{Name: "n", Path: "n", Type: contract.TypeNumeric, Was: contract.TypeInteger},
				contract.Column{Name: "f", Path: "f", Type: contract.TypeText, Was: contract.TypeBoolean},
				contract.Column{Name: "j", Path: "j", Type: contract.TypeJSON, Was: contract.TypeInteger})
			MustPrepare(t, s, wide)
			c := Row("c", "79.19", "yes", `{"a":1}`)
			MustUpsert(t, s, wide, contract.Counts{Inserted: 1}, c)
			AssertRows(t, b.Read(t, wide), Want(t, wide,
				contract.Row{Values: []any{"a", "9007199254740993", "true", "7"}, Hash: a0.Hash},
				contract.Row{Values: []any{"b", "5", "false", nil}, Hash: b0.Hash}, c))
			// A new sink, or the same page again, widens nothing more.
			MustUpsert(t, b.Sink(t), wide, contract.Counts{Unchanged: 1}, c)
		}},
		{"version guard", func(t *testing.T, b *DB) {
			s := b.Sink(t)
			tbl := b.Table("versioned", []string{"id"},
				Col("id", contract.TypeText), Col("name", contract.TypeText), Col("updated_at", contract.TypeTimestamp))
			tbl.Version = "updated_at"
			MustPrepare(t, s, tbl)
			at := func(sec, nsec int) time.Time { return time.Date(2024, 1, 1, 10, 0, sec, nsec, time.UTC) }
			MustUpsert(t, s, tbl, contract.Counts{Inserted: 2}, Row("a", "v1", at(0, 500000000)), Row("b", "nov", nil))
			// Older: not written.
			MustUpsert(t, s, tbl, contract.Counts{Unchanged: 1}, Row("a", "stale", at(0, 0)))
			// A NULL version never overwrites a stored one.
			MustUpsert(t, s, tbl, contract.Counts{Unchanged: 1}, Row("a", "null version", nil))
			AssertRows(t, b.Read(t, tbl), Want(t, tbl, Row("a", "v1", at(0, 500000000)), Row("b", "nov", nil)))
			// Same version, new content: written (>=).
			MustUpsert(t, s, tbl, contract.Counts{Updated: 1}, Row("a", "v1b", at(0, 500000000)))
			// Newer, and across a fraction boundary ("…00.5Z" vs "…01Z").
			// A stored NULL version is overwritten by any version.
			MustUpsert(t, s, tbl, contract.Counts{Updated: 2}, Row("a", "v2", at(1, 0)), Row("b", "v", at(0, 0)))
			AssertRows(t, b.Read(t, tbl), Want(t, tbl, Row("a", "v2", at(1, 0)), Row("b", "v", at(0, 0))))
		}},
		{"integer version guard", func(t *testing.T, b *DB) {
			s := b.Sink(t)
			tbl := b.Table("versioned_int", []string{"id"},
				Col("id", contract.TypeInteger), Col("name", contract.TypeText), Col("rev", contract.TypeInteger))
			tbl.Version = "rev"
			MustPrepare(t, s, tbl)
			MustUpsert(t, s, tbl, contract.Counts{Inserted: 1}, Row(int64(1), "r10", int64(10)))
			MustUpsert(t, s, tbl, contract.Counts{Unchanged: 1}, Row(int64(1), "r9", int64(9)))
			MustUpsert(t, s, tbl, contract.Counts{Updated: 1}, Row(int64(1), "r11", int64(11)))
			AssertRows(t, b.Read(t, tbl), Want(t, tbl, Row(int64(1), "r11", int64(11))))
		}},
		{"failed page commits nothing", func(t *testing.T, b *DB) {
			s, tbl := b.Sink(t), People(b)
			MustPrepare(t, s, tbl)
			MustUpsert(t, s, tbl, contract.Counts{Inserted: 1}, Row("a", "Ann", int64(1)))
			_, err := s.Upsert(ctx, tbl, []contract.Row{Row("a", "changed", int64(1)), Row("b", "Bob", int64(2)), Row("c", "Cy", "not an integer")})
			if code := contract.ClassOf(err); code != contract.Permanent {
				t.Fatalf("bad value: exit %d (%v), want %d", code, err, contract.Permanent)
			}
			AssertRows(t, b.Read(t, tbl), Want(t, tbl, Row("a", "Ann", int64(1))))
			// The sink is still usable.
			MustUpsert(t, s, tbl, contract.Counts{Inserted: 1, Unchanged: 1}, Row("a", "Ann", int64(1)), Row("b", "Bob", int64(2)))
		}},
		{"empty page", func(t *testing.T, b *DB) {
			// An empty page writes nothing and touches no stored row.
			s, tbl := b.Sink(t), People(b)
			MustPrepare(t, s, tbl)
			MustUpsert(t, s, tbl, contract.Counts{})
			AssertRows(t, b.Read(t, tbl), nil)
			rows := []contract.Row{Row("a", "Ann", int64(1)), Row("b", "Bob", int64(2))}
			MustUpsert(t, s, tbl, contract.Counts{Inserted: 2}, rows...)
			before := syncedAt(t, b, tbl)
			MustUpsert(t, s, tbl, contract.Counts{})
			AssertRows(t, b.Read(t, tbl), Want(t, tbl, rows...))
			if after := syncedAt(t, b, tbl); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("synced_at %v after an empty page, was %v", after, before)
			}
		}},
		{"reopen", func(t *testing.T, b *DB) {
			tbl := People(b)
			s := b.Sink(t)
			MustPrepare(t, s, tbl)
			rows := []contract.Row{Row("a", "Ann", int64(1)), Row("b", "Bob", int64(2))}
			MustUpsert(t, s, tbl, contract.Counts{Inserted: 2}, rows...)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = b.Sink(t)
			MustPrepare(t, s, tbl)
			MustUpsert(t, s, tbl, contract.Counts{Unchanged: 2}, rows...)
		}},
		{"equal numeric keys", func(t *testing.T, b *DB) {
			s := b.Sink(t)
			tbl := b.Table("numkeys", []string{"k"}, Col("k", contract.TypeNumeric), Col("v", contract.TypeText))
			MustPrepare(t, s, tbl)
			// PostgreSQL compares numerics by value, SQLite stores the text: the
			// page must succeed either way and the counts must add up.
			got, err := s.Upsert(ctx, tbl, []contract.Row{Row("1.0", "a"), Row("1", "b"), Row("2", "c")})
			if err != nil {
				t.Fatal(err)
			}
			if got.Inserted+got.Updated+got.Unchanged != 3 {
				t.Fatalf("counts %+v do not add up to 3", got)
			}
		}},
	}
}
