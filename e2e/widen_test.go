package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// widenTarget is a database the widening tests run on: the job's
// target.url and table, and how to read the table back as text.
type widenTarget struct {
	url, table string
	// decls returns each column's declared type (SQLite) or format_type
	// (PostgreSQL).
	decls func(t *testing.T) map[string]string
	// read returns id → column → value as text ("" for NULL).
	read func(t *testing.T, cols ...string) map[string]map[string]string
}

// widenDBs are the databases of the widening tests.
var widenDBs = []string{"sqlite", "postgres"}

// newWidenTarget returns the SQLite target out.db in dir, or a table in a
// fresh PostgreSQL schema (skipping the test when PostgreSQL is not
// configured).
func newWidenTarget(t *testing.T, db, dir string) widenTarget {
	if db == "sqlite" {
		path := filepath.Join(dir, "out.db")
		return widenTarget{url: "sqlite:out.db", table: "orders",
			decls: func(t *testing.T) map[string]string {
				return scanTexts(t, queryRows(t, openSQLite(t, path), `SELECT name, type FROM pragma_table_info('orders')`), nil)["name"]
			},
			read: func(t *testing.T, cols ...string) map[string]map[string]string {
				return scanTexts(t, queryRows(t, openSQLite(t, path), `SELECT id, `+strings.Join(cols, ", ")+` FROM orders`), cols)
			}}
	}
	pgURL := postgresURL(t)
	schema := freshSchema(t, pgURL)
	qt := pgx.Identifier{schema, "orders"}.Sanitize()
	query := func(t *testing.T, q string, cols []string) map[string]map[string]string {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, pgURL)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		rows, err := conn.Query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return scanTexts(t, rows, cols)
	}
	return widenTarget{url: pgURL, table: schema + ".orders",
		decls: func(t *testing.T) map[string]string {
			return query(t, `SELECT attname::text, format_type(atttypid, atttypmod) FROM pg_attribute
				WHERE attrelid = '`+qt+`'::regclass AND attnum > 0 AND NOT attisdropped`, nil)["name"]
		},
		read: func(t *testing.T, cols ...string) map[string]map[string]string {
			var sel []string
			for _, c := range cols {
				sel = append(sel, c+"::text")
			}
			return query(t, `SELECT id::text, `+strings.Join(sel, ", ")+` FROM `+qt, cols)
		}}
}

// textRows is what scanTexts reads: *sql.Rows or pgx.Rows.
type textRows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// queryRows runs q on db; its *sql.Rows as textRows.
func queryRows(t *testing.T, db *sql.DB, q string) textRows {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	return sqlTexts{rows}
}

type sqlTexts struct{ *sql.Rows }

func (r sqlTexts) Close() { _ = r.Rows.Close() }

// scanTexts reads rows of a key and, with cols, one value per column into
// key → column → text ("" for NULL); with cols nil, rows of (name, value)
// into "name" → name → value.
func scanTexts(t *testing.T, rows textRows, cols []string) map[string]map[string]string {
	t.Helper()
	defer rows.Close()
	out := map[string]map[string]string{}
	for rows.Next() {
		n := max(len(cols), 1)
		vals := make([]sql.NullString, n+1)
		ptrs := make([]any, n+1)
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		if cols == nil {
			if out["name"] == nil {
				out["name"] = map[string]string{}
			}
			out["name"][vals[0].String] = vals[1].String
			continue
		}
		m := map[string]string{}
		for i, c := range cols {
			m[c] = vals[i+1].String
		}
		out[vals[0].String] = m
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// widenJob is a job without target.columns over a rawAPI.
func widenJob(apiURL string, tg widenTarget, onBad string) string {
	return fmt.Sprintf(`name: widen
source:
  url: %s/items
  records: data
pagination:
  style: page
  size_param: per_page
  size: 10
target:
  url: %q
  table: %s
  key: [id]
  on_bad_record: %s
`, apiURL, tg.url, tg.table, onBad)
}

// widenRecord is record id of TestInferWidens: price holds 0 then 79.19 on
// the first page (the repro: the whole first page decides the type), qty an
// integer until 2.5 on page 3, flag a boolean until "yes" on page 3.
func widenRecord(id int) string {
	price := fmt.Sprint(id + 100)
	switch id {
	case 1:
		price = "0"
	case 2:
		price = "79.19"
	case 3:
		price = "12345678901234567.891"
	}
	qty := fmt.Sprint(id * 3)
	if id == 25 {
		qty = "2.5"
	}
	flag := fmt.Sprint(id%2 == 0)
	if id == 27 {
		flag = `"yes"`
	}
	return fmt.Sprintf(`{"id":%d,"price":%s,"qty":%s,"flag":%s}`, id, price, qty, flag)
}

// wantWidened is record id of widenRecord as the widened table holds it, as text.
func wantWidened(id int) map[string]string {
	rec := widenRecord(id)
	m := regexp.MustCompile(`"price":([^,]+),"qty":([^,]+),"flag":(.+)}$`).FindStringSubmatch(rec)
	return map[string]string{"price": m[1], "qty": m[2], "flag": strings.Trim(m[3], `"`)}
}

// Without target.columns, the first page's values decide a column's type
// together (0 then 79.19 is numeric, not a failure), and a later value that
// the column cannot take widens it (integer → numeric, boolean → text) in
// the page's own write: no bad record, no job that fails on every rerun.
// The rows written before keep their values exactly, and a rerun finds
// every row unchanged. A process killed after the widening page's write,
// before its checkpoint, continues to the same table.
func TestInferWidens(t *testing.T) {
	for _, name := range widenDBs {
		for _, c := range []struct{ name, kill string }{
			{"clean", ""},
			{"killed", "target-committed:3"},
		} {
			t.Run(name+"/"+c.name, func(t *testing.T) { testInferWidens(t, name, c.kill) })
		}
	}
}

// testInferWidens is one case of TestInferWidens: database name, and
// the failpoint that kills the first run ("" for none).
func testInferWidens(t *testing.T, name, kill string) {
	dir := t.TempDir()
	tg := newWidenTarget(t, name, dir)
	api := newRawAPI(30, nil)
	for id := 1; id <= 30; id++ {
		api.set(id-1, widenRecord(id))
	}
	job := writeJob(t, dir, "job.yaml", widenJob(serve(t, api), tg, "fail"))
	if kill != "" {
		k := idemsync(t, dir, []string{"IDEMSYNC_TEST_FAILPOINT=" + kill}, "run", job)
		if k.code != -1 && k.code != 137 {
			t.Fatalf("run with failpoint: exit %d, want killed: %s", k.code, k.stderr)
		}
	}
	// After a kill the run continues; its counts include the pages the
	// killed process committed, and page 3, written again, is unchanged.
	r := runCode(t, dir, nil, 0, "run", job)
	if r.Status != "completed" || r.Inserted+r.Unchanged != 30 || r.Updated != 0 || r.Skipped != 0 {
		t.Fatalf("run: %+v, want the 30 rows written once", r)
	}
	got := tg.read(t, "price", "qty", "flag")
	if len(got) != 30 {
		t.Errorf("%d rows, want 30", len(got))
	}
	for id := 1; id <= 30; id++ {
		if want := wantWidened(id); fmt.Sprint(got[fmt.Sprint(id)]) != fmt.Sprint(want) {
			t.Errorf("row %d: %v, want %v", id, got[fmt.Sprint(id)], want)
		}
	}
	decls := tg.decls(t)
	want := map[string]string{"price": "numeric", "qty": "numeric", "flag": "text"}
	if name == "sqlite" {
		want = map[string]string{"price": "TEXT", "qty": "TEXT", "flag": "TEXT"}
	}
	for c, w := range want {
		if decls[c] != w {
			t.Errorf("column %s is %q, want %q (all: %v)", c, decls[c], w, decls)
		}
	}
	again := runCode(t, dir, nil, 0, "run", job)
	if again.Inserted != 0 || again.Updated != 0 || again.Unchanged != 30 {
		t.Errorf("rerun: %+v, want all 30 rows unchanged", again)
	}
	if after := tg.read(t, "price", "qty", "flag"); fmt.Sprint(after) != fmt.Sprint(got) {
		t.Errorf("the rerun changed the table:\n%v\nwas\n%v", after, got)
	}
}

// initColumnRe matches a column line of init's job file.
var initColumnRe = regexp.MustCompile(`(?m)^    (\w+): \{path: [^,]+, type: (\w+)\}$`)

// idemsync init and a run without target.columns type the columns of the
// same first page alike: both use the one inference (docs/job-file.md).
func TestInferInitAgrees(t *testing.T) {
	for _, name := range widenDBs {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			tg := newWidenTarget(t, name, dir)
			api := newRawAPI(10, nil)
			for id := 1; id <= 10; id++ {
				rec := widenRecord(id)
				if id == 4 {
					rec = `{"id":4,"price":1,"qty":null,"flag":true,"note":"x","tags":["a"]}`
				}
				if id == 5 {
					rec = `{"id":5,"price":2,"qty":7,"flag":false,"note":12,"tags":{"a":1}}`
				}
				api.set(id-1, rec)
			}
			url := serve(t, api)
			in := idemsync(t, dir, nil, "init", url+"/items?page=1", "--out", "-")
			if in.code != 0 {
				t.Fatalf("init: exit %d: %s", in.code, in.stderr)
			}
			initTypes := map[string]string{}
			for _, m := range initColumnRe.FindAllStringSubmatch(in.stdout, -1) {
				initTypes[m[1]] = m[2]
			}
			wantInit := map[string]string{"id": "integer", "price": "numeric", "qty": "integer", "flag": "boolean", "note": "text", "tags": "json"}
			if fmt.Sprint(initTypes) != fmt.Sprint(wantInit) {
				t.Fatalf("init proposes %v, want %v:\n%s", initTypes, wantInit, in.stdout)
			}
			job := writeJob(t, dir, "job.yaml", widenJob(url, tg, "fail"))
			runCode(t, dir, nil, 0, "run", job)
			decls := tg.decls(t)
			for c, typ := range initTypes {
				if w := declOf(name, typ); decls[c] != w {
					t.Errorf("column %s: run made %q, init proposes %s (%q)", c, decls[c], typ, w)
				}
			}
		})
	}
}

// declOf is how a database declares a column of an idemsync type.
func declOf(db, typ string) string {
	if db == "sqlite" {
		return map[string]string{"integer": "INTEGER", "boolean": "INTEGER", "numeric": "TEXT", "text": "TEXT", "json": "TEXT"}[typ]
	}
	return map[string]string{"integer": "bigint", "boolean": "boolean", "numeric": "numeric", "text": "text", "json": "jsonb"}[typ]
}
