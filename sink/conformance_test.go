package sink_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/sink"
	idsync "github.com/idemsync/idemsync/sync"
)

func col(name string, typ idsync.ColumnType) idsync.Column {
	return idsync.Column{Name: name, Path: name, Type: typ}
}

// people is the small table most cases use.
func people(b *backend) *idsync.Table {
	return b.table("people", []string{"id"},
		col("id", idsync.TypeText), col("name", idsync.TypeText), col("age", idsync.TypeInteger))
}

// TestConformance is the one suite every sink passes.
func TestConformance(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		run  func(t *testing.T, b *backend)
	}{
		{"insert", func(t *testing.T, b *backend) {
			s, tbl := b.open(t), people(b)
			mustPrepare(t, s, tbl)
			rows := []idsync.Row{row("a", "Ann", int64(30)), row("b", "Bob", int64(40)), row("c", "Cy", int64(50))}
			mustUpsert(t, s, tbl, idsync.Counts{Inserted: 3}, rows...)
			assertRows(t, b.read(t, tbl), want(t, tbl, rows...))
		}},
		{"large page", func(t *testing.T, b *backend) {
			// Crosses the batched insert and lookup sizes, with a remainder,
			// then mixes updates, unchanged rows and new rows in one page.
			s, tbl := b.open(t), people(b)
			mustPrepare(t, s, tbl)
			var first, second []idsync.Row
			for i := range 937 {
				first = append(first, row(fmt.Sprintf("k%04d", i), "n", int64(i)))
			}
			mustUpsert(t, s, tbl, idsync.Counts{Inserted: 937}, first...)
			for i := range 1001 {
				age := int64(i)
				if i%3 == 0 {
					age = -age - 1 // changed
				}
				second = append(second, row(fmt.Sprintf("k%04d", i), "n", age))
			}
			mustUpsert(t, s, tbl, idsync.Counts{Inserted: 64, Updated: 313, Unchanged: 624}, second...)
			assertRows(t, b.read(t, tbl), want(t, tbl, second...))
		}},
		{"update", func(t *testing.T, b *backend) {
			s, tbl := b.open(t), people(b)
			mustPrepare(t, s, tbl)
			mustUpsert(t, s, tbl, idsync.Counts{Inserted: 3},
				row("a", "Ann", int64(30)), row("b", "Bob", int64(40)), row("c", "Cy", int64(50)))
			before := syncedAt(t, b, tbl)
			time.Sleep(5 * time.Millisecond)
			rows := []idsync.Row{row("a", "Ann", int64(31)), row("b", "Bob", int64(40)), row("c", "Cyril", int64(50))}
			mustUpsert(t, s, tbl, idsync.Counts{Updated: 2, Unchanged: 1}, rows...)
			assertRows(t, b.read(t, tbl), want(t, tbl, rows...))
			after := syncedAt(t, b, tbl)
			if after[0] == before[0] || after[2] == before[2] || after[1] != before[1] {
				t.Errorf("synced_at before %v after %v: want only rows a and c rewritten", before, after)
			}
		}},
		{"unchanged", func(t *testing.T, b *backend) {
			s, tbl := b.open(t), people(b)
			mustPrepare(t, s, tbl)
			rows := []idsync.Row{row("a", "Ann", int64(30)), row("b", "Bob", nil)}
			mustUpsert(t, s, tbl, idsync.Counts{Inserted: 2}, rows...)
			before := syncedAt(t, b, tbl)
			time.Sleep(5 * time.Millisecond)
			mustUpsert(t, s, tbl, idsync.Counts{Unchanged: 2}, rows...)
			if after := syncedAt(t, b, tbl); strings.Join(after, ",") != strings.Join(before, ",") {
				t.Errorf("synced_at rewritten by an unchanged upsert: %v -> %v", before, after)
			}
			assertRows(t, b.read(t, tbl), want(t, tbl, rows...))
		}},
		{"duplicate keys in one page", func(t *testing.T, b *backend) {
			s, tbl := b.open(t), people(b)
			mustPrepare(t, s, tbl)
			mustUpsert(t, s, tbl, idsync.Counts{Inserted: 2, Unchanged: 2},
				row("a", "first", int64(1)), row("b", "Bob", int64(2)), row("a", "second", int64(3)), row("a", "last", int64(4)))
			assertRows(t, b.read(t, tbl), want(t, tbl, row("a", "last", int64(4)), row("b", "Bob", int64(2))))
			// Duplicates of an existing key: one update, the rest unchanged.
			mustUpsert(t, s, tbl, idsync.Counts{Updated: 1, Unchanged: 2},
				row("b", "x", int64(2)), row("b", "y", int64(2)), row("b", "Bobby", int64(2)))
			assertRows(t, b.read(t, tbl), want(t, tbl, row("a", "last", int64(4)), row("b", "Bobby", int64(2))))
		}},
		{"composite key", func(t *testing.T, b *backend) {
			s := b.open(t)
			tbl := b.table("orders", []string{"tenant", "id"},
				col("tenant", idsync.TypeText), col("id", idsync.TypeInteger), col("total", idsync.TypeNumeric))
			mustPrepare(t, s, tbl)
			mustUpsert(t, s, tbl, idsync.Counts{Inserted: 3},
				row("t1", int64(1), "1.00"), row("t2", int64(1), "2.00"), row("t1", int64(2), "3.00"))
			mustUpsert(t, s, tbl, idsync.Counts{Updated: 1, Unchanged: 1, Inserted: 1},
				row("t2", int64(1), "2.50"), row("t1", int64(1), "1.00"), row("t2", int64(2), "4.00"))
			assertRows(t, b.read(t, tbl), want(t, tbl,
				row("t1", int64(1), "1.00"), row("t1", int64(2), "3.00"), row("t2", int64(1), "2.50"), row("t2", int64(2), "4.00")))
		}},
		{"every column type", func(t *testing.T, b *backend) {
			s := b.open(t)
			tbl := b.table("types", []string{"id"},
				col("id", idsync.TypeInteger), col("t", idsync.TypeText), col("i", idsync.TypeInteger),
				col("r", idsync.TypeReal), col("n", idsync.TypeNumeric), col("b", idsync.TypeBoolean),
				col("ts", idsync.TypeTimestamp), col("j", idsync.TypeJSON))
			mustPrepare(t, s, tbl)
			ist := time.FixedZone("IST", 5*3600+1800)
			pst := time.FixedZone("PST", -8*3600)
			rows := []idsync.Row{
				row(int64(1), "héllo 🌍 \"quoted\" 'single'\nnew line", int64(math.MaxInt64), 0.1,
					"12345678901234567890.123456789", true,
					time.Date(2024, 5, 1, 17, 30, 0, 123456000, ist), `{"a":[1,2,{"b":null}],"ü":"✓"}`),
				row(int64(2), "", int64(math.MinInt64), -1.5e300, "-0.000000000000000000001", false,
					time.Date(2023, 12, 31, 16, 0, 0, 0, pst), `[]`),
				row(int64(3), "x", int64(0), 0.0, "12.50", true, time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), `"text"`),
			}
			mustUpsert(t, s, tbl, idsync.Counts{Inserted: 3}, rows...)
			assertRows(t, b.read(t, tbl), want(t, tbl, rows...))
			// Exact numerics and the stored instant, read raw.
			numExpr, tsExpr := sink.QuoteIdent("n"), sink.QuoteIdent("ts")
			if b.name == "postgres" {
				numExpr += "::text"
			}
			raw := b.rows(t, "SELECT "+numExpr+", "+tsExpr+" FROM "+qname(tbl)+" ORDER BY "+sink.QuoteIdent("id"))
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
			mustUpsert(t, s, tbl, idsync.Counts{Unchanged: 3}, rows...)
		}},
		{"null values", func(t *testing.T, b *backend) {
			s := b.open(t)
			tbl := b.table("nulls", []string{"id"},
				col("id", idsync.TypeText), col("t", idsync.TypeText), col("i", idsync.TypeInteger),
				col("r", idsync.TypeReal), col("n", idsync.TypeNumeric), col("b", idsync.TypeBoolean),
				col("ts", idsync.TypeTimestamp), col("j", idsync.TypeJSON))
			mustPrepare(t, s, tbl)
			empty := row("a", nil, nil, nil, nil, nil, nil, nil)
			mustUpsert(t, s, tbl, idsync.Counts{Inserted: 1}, empty)
			assertRows(t, b.read(t, tbl), want(t, tbl, empty))
			full := row("a", "x", int64(1), 1.5, "1", false, time.Unix(0, 0), `null`)
			mustUpsert(t, s, tbl, idsync.Counts{Updated: 1}, full)
			assertRows(t, b.read(t, tbl), want(t, tbl, full))
			mustUpsert(t, s, tbl, idsync.Counts{Updated: 1}, empty)
			assertRows(t, b.read(t, tbl), want(t, tbl, empty))
		}},
		{"odd identifiers", func(t *testing.T, b *backend) {
			s := b.open(t)
			tbl := b.table(`we"ird tab🙂le`, []string{"id key"},
				col("id key", idsync.TypeText), col(`quo"te`, idsync.TypeText), col("ünïcødé", idsync.TypeInteger),
				col("select", idsync.TypeBoolean), col("semi;colon--", idsync.TypeText), col("Mixed Case", idsync.TypeText))
			mustPrepare(t, s, tbl)
			rows := []idsync.Row{row("k'1", `v"1`, int64(1), true, "x; DROP TABLE x; --", "M")}
			mustUpsert(t, s, tbl, idsync.Counts{Inserted: 1}, rows...)
			mustPrepare(t, s, tbl) // idempotent on an existing odd table
			rows[0] = row("k'1", `v"2`, int64(1), true, "x; DROP TABLE x; --", "M")
			mustUpsert(t, s, tbl, idsync.Counts{Updated: 1}, rows...)
			assertRows(t, b.read(t, tbl), want(t, tbl, rows...))
		}},
		{"schema", func(t *testing.T, b *backend) {
			s := b.open(t)
			if b.name == "sqlite" {
				tbl := people(b)
				tbl.Schema = "main"
				mustPrepare(t, s, tbl)
				mustUpsert(t, s, tbl, idsync.Counts{Inserted: 1}, row("a", "Ann", nil))
				tbl.Schema = "other"
				err := s.Prepare(ctx, tbl)
				if code := idsync.ExitCode(err); code != idsync.ExitUsage {
					t.Fatalf("schema other: exit %d (%v), want %d", code, err, idsync.ExitUsage)
				}
				return
			}
			// A schema with an odd name.
			odd := `Odd "Schéma" ` + randomHex(3)
			b.exec(t, "CREATE SCHEMA "+sink.QuoteIdent(odd))
			t.Cleanup(func() { b.exec(t, "DROP SCHEMA "+sink.QuoteIdent(odd)+" CASCADE") })
			tbl := people(b)
			tbl.Schema = odd
			mustPrepare(t, s, tbl)
			mustUpsert(t, s, tbl, idsync.Counts{Inserted: 1}, row("a", "Ann", nil))
			assertRows(t, b.read(t, tbl), want(t, tbl, row("a", "Ann", nil)))
			// No schema: the search_path (public), with a name no other test uses.
			plain := people(b)
			plain.Schema, plain.Name = "", "people_"+randomHex(4)
			t.Cleanup(func() { b.exec(t, "DROP TABLE IF EXISTS "+qname(plain)) })
			mustPrepare(t, s, plain)
			mustUpsert(t, s, plain, idsync.Counts{Inserted: 1}, row("b", "Bob", nil))
			assertRows(t, b.read(t, plain), want(t, plain, row("b", "Bob", nil)))
			// A missing schema is an error that says how to create it.
			missing := people(b)
			missing.Schema = "no_such_schema_" + randomHex(4)
			err := s.Prepare(ctx, missing)
			if code := idsync.ExitCode(err); code != idsync.ExitPermanent || !strings.Contains(idsync.Hint(err), "CREATE SCHEMA") {
				t.Fatalf("missing schema: exit %d, hint %q (%v)", code, idsync.Hint(err), err)
			}
		}},
		{"existing table without a unique key", func(t *testing.T, b *backend) {
			s, tbl := b.open(t), people(b)
			b.exec(t, "CREATE TABLE "+qname(tbl)+` (id TEXT, name TEXT, age INTEGER)`)
			err := s.Prepare(ctx, tbl)
			if code := idsync.ExitCode(err); code != idsync.ExitPermanent {
				t.Fatalf("exit %d (%v), want %d", code, err, idsync.ExitPermanent)
			}
			hint := idsync.Hint(err)
			wantSQL := map[string]string{"sqlite": "CREATE UNIQUE INDEX", "postgres": "ADD UNIQUE"}[b.name]
			if !strings.Contains(hint, wantSQL) || !strings.Contains(hint, qname(tbl)) {
				t.Fatalf("hint %q: want the %s statement for %s", hint, wantSQL, qname(tbl))
			}
			// The hinted statement is the fix.
			_, stmt, _ := strings.Cut(hint, "run: ")
			b.exec(t, stmt)
			mustPrepare(t, s, tbl)
			mustUpsert(t, s, tbl, idsync.Counts{Inserted: 1}, row("a", "Ann", int64(1)))
			assertRows(t, b.read(t, tbl), want(t, tbl, row("a", "Ann", int64(1))))
		}},
		{"unique key on other columns", func(t *testing.T, b *backend) {
			s, tbl := b.open(t), people(b)
			b.exec(t, "CREATE TABLE "+qname(tbl)+` (id TEXT, name TEXT, age INTEGER, UNIQUE (id, name))`)
			if code := idsync.ExitCode(s.Prepare(ctx, tbl)); code != idsync.ExitPermanent {
				t.Fatalf("unique (id, name) accepted for key (id): exit %d", code)
			}
		}},
		{"existing table with its own key and columns", func(t *testing.T, b *backend) {
			s := b.open(t)
			tbl := b.table("own", []string{"id"}, col("id", idsync.TypeInteger), col("name", idsync.TypeText))
			b.exec(t, "CREATE TABLE "+qname(tbl)+` (id INTEGER PRIMARY KEY, name TEXT, note TEXT NOT NULL DEFAULT 'kept')`)
			mustPrepare(t, s, tbl)
			mustUpsert(t, s, tbl, idsync.Counts{Inserted: 2}, row(int64(1), "a"), row(int64(2), "b"))
			mustUpsert(t, s, tbl, idsync.Counts{Updated: 1, Unchanged: 1}, row(int64(1), "A"), row(int64(2), "b"))
			assertRows(t, b.read(t, tbl), want(t, tbl, row(int64(1), "A"), row(int64(2), "b")))
			if got := b.rows(t, "SELECT note FROM "+qname(tbl)); len(got) != 2 || got[0][0] != "kept" {
				t.Errorf("user column note = %v, want kept", got)
			}
		}},
		{"missing table without create", func(t *testing.T, b *backend) {
			s, tbl := b.open(t), people(b)
			tbl.Create = false
			err := s.Prepare(ctx, tbl)
			if code := idsync.ExitCode(err); code != idsync.ExitPermanent || !strings.Contains(err.Error(), "does not exist") {
				t.Fatalf("exit %d (%v), want %d and 'does not exist'", code, err, idsync.ExitPermanent)
			}
		}},
		{"column added by a later prepare", func(t *testing.T, b *backend) {
			s, tbl := b.open(t), people(b)
			mustPrepare(t, s, tbl)
			a0, b0 := row("a", "Ann", int64(1)), row("b", "Bob", int64(2))
			mustUpsert(t, s, tbl, idsync.Counts{Inserted: 2}, a0, b0)
			wider := people(b)
			wider.Columns = append(wider.Columns, col("email", idsync.TypeText), col("since", idsync.TypeTimestamp))
			mustPrepare(t, s, wider)
			c := row("c", "Cy", int64(3), "c@example.com", time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC))
			mustUpsert(t, s, wider, idsync.Counts{Inserted: 1}, c)
			// Earlier rows keep their values (and hash); the new columns are NULL.
			assertRows(t, b.read(t, wider), want(t, wider,
				idsync.Row{Values: append(a0.Values, nil, nil), Hash: a0.Hash},
				idsync.Row{Values: append(b0.Values, nil, nil), Hash: b0.Hash}, c))
			a := row("a", "Ann", int64(1), "a@example.com", nil)
			mustUpsert(t, s, wider, idsync.Counts{Updated: 1}, a)
			// A new sink on the same table sees the same columns.
			mustPrepare(t, b.open(t), wider)
		}},
		{"version guard", func(t *testing.T, b *backend) {
			s := b.open(t)
			tbl := b.table("versioned", []string{"id"},
				col("id", idsync.TypeText), col("name", idsync.TypeText), col("updated_at", idsync.TypeTimestamp))
			tbl.Version = "updated_at"
			mustPrepare(t, s, tbl)
			at := func(sec, nsec int) time.Time { return time.Date(2024, 1, 1, 10, 0, sec, nsec, time.UTC) }
			mustUpsert(t, s, tbl, idsync.Counts{Inserted: 2}, row("a", "v1", at(0, 500000000)), row("b", "nov", nil))
			// Older: not written.
			mustUpsert(t, s, tbl, idsync.Counts{Unchanged: 1}, row("a", "stale", at(0, 0)))
			// A NULL version never overwrites a stored one.
			mustUpsert(t, s, tbl, idsync.Counts{Unchanged: 1}, row("a", "null version", nil))
			assertRows(t, b.read(t, tbl), want(t, tbl, row("a", "v1", at(0, 500000000)), row("b", "nov", nil)))
			// Same version, new content: written (>=).
			mustUpsert(t, s, tbl, idsync.Counts{Updated: 1}, row("a", "v1b", at(0, 500000000)))
			// Newer, and across a fraction boundary ("…00.5Z" vs "…01Z").
			// A stored NULL version is overwritten by any version.
			mustUpsert(t, s, tbl, idsync.Counts{Updated: 2}, row("a", "v2", at(1, 0)), row("b", "v", at(0, 0)))
			assertRows(t, b.read(t, tbl), want(t, tbl, row("a", "v2", at(1, 0)), row("b", "v", at(0, 0))))
		}},
		{"integer version guard", func(t *testing.T, b *backend) {
			s := b.open(t)
			tbl := b.table("versioned_int", []string{"id"},
				col("id", idsync.TypeInteger), col("name", idsync.TypeText), col("rev", idsync.TypeInteger))
			tbl.Version = "rev"
			mustPrepare(t, s, tbl)
			mustUpsert(t, s, tbl, idsync.Counts{Inserted: 1}, row(int64(1), "r10", int64(10)))
			mustUpsert(t, s, tbl, idsync.Counts{Unchanged: 1}, row(int64(1), "r9", int64(9)))
			mustUpsert(t, s, tbl, idsync.Counts{Updated: 1}, row(int64(1), "r11", int64(11)))
			assertRows(t, b.read(t, tbl), want(t, tbl, row(int64(1), "r11", int64(11))))
		}},
		{"failed page commits nothing", func(t *testing.T, b *backend) {
			s, tbl := b.open(t), people(b)
			mustPrepare(t, s, tbl)
			mustUpsert(t, s, tbl, idsync.Counts{Inserted: 1}, row("a", "Ann", int64(1)))
			_, err := s.Upsert(ctx, tbl, []idsync.Row{row("a", "changed", int64(1)), row("b", "Bob", int64(2)), row("c", "Cy", "not an integer")})
			if code := idsync.ExitCode(err); code != idsync.ExitPermanent {
				t.Fatalf("bad value: exit %d (%v), want %d", code, err, idsync.ExitPermanent)
			}
			assertRows(t, b.read(t, tbl), want(t, tbl, row("a", "Ann", int64(1))))
			// The sink is still usable.
			mustUpsert(t, s, tbl, idsync.Counts{Inserted: 1, Unchanged: 1}, row("a", "Ann", int64(1)), row("b", "Bob", int64(2)))
		}},
		{"empty page", func(t *testing.T, b *backend) {
			s, tbl := b.open(t), people(b)
			mustPrepare(t, s, tbl)
			mustUpsert(t, s, tbl, idsync.Counts{})
		}},
		{"reopen", func(t *testing.T, b *backend) {
			tbl := people(b)
			s := b.open(t)
			mustPrepare(t, s, tbl)
			rows := []idsync.Row{row("a", "Ann", int64(1)), row("b", "Bob", int64(2))}
			mustUpsert(t, s, tbl, idsync.Counts{Inserted: 2}, rows...)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = b.open(t)
			mustPrepare(t, s, tbl)
			mustUpsert(t, s, tbl, idsync.Counts{Unchanged: 2}, rows...)
		}},
		{"equal numeric keys", func(t *testing.T, b *backend) {
			s := b.open(t)
			tbl := b.table("numkeys", []string{"k"}, col("k", idsync.TypeNumeric), col("v", idsync.TypeText))
			mustPrepare(t, s, tbl)
			// PostgreSQL compares numerics by value, SQLite stores the text: the
			// page must succeed either way and the counts must add up.
			got, err := s.Upsert(ctx, tbl, []idsync.Row{row("1.0", "a"), row("1", "b"), row("2", "c")})
			if err != nil {
				t.Fatal(err)
			}
			if got.Inserted+got.Updated+got.Unchanged != 3 {
				t.Fatalf("counts %+v do not add up to 3", got)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			forEachSink(t, tc.run)
		})
	}
}
