package e2e

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// exactValues are records whose values a target either stores exactly or
// refuses as a bad record naming the column: never a value of its own
// making. column and reason name the dead letter of a record refused on
// both targets, pgColumn and pgWhy of one PostgreSQL alone refuses; col
// names a stored column to read back, with its text in SQLite and in
// PostgreSQL.
var exactValues = []struct {
	id, raw           string
	column, reason    string
	pgColumn, pgWhy   string // refused by PostgreSQL only
	col, sqlite, want string // a stored value to check: column, SQLite text, PostgreSQL text
}{
	{id: "ok", raw: `"n":"12","s":"x\ud83d\ude00","t":"2024-01-01T00:00:00.123456Z","j":{"a":"\ud83d\ude00"}`,
		col: "s", sqlite: "x\U0001F600", want: "x\U0001F600"},
	{id: "exp", raw: `"n":1e3`, col: "n", sqlite: "1000", want: "1000"},
	// Strings a Go parser reads as numbers, but that are no decimal: the
	// hexadecimal 16, the fraction 2, the binary 3, the grouped 1000.
	{id: "hex", raw: `"n":"0x10"`, column: "n", reason: "64-bit integer"},
	{id: "frac", raw: `"n":"4/2"`, column: "n", reason: "64-bit integer"},
	{id: "bin", raw: `"n":"0b11"`, column: "n", reason: "64-bit integer"},
	{id: "grouped", raw: `"n":"1_000"`, column: "n", reason: "64-bit integer"},
	// A lone UTF-16 surrogate has no UTF-8 form: read as U+FFFD, the A
	// after it was lost, and "\udc00\ud800" was one U+FFFD.
	{id: "lone", raw: `"s":"x\ud800\u0041"`, column: "s", reason: "surrogate"},
	{id: "lone2", raw: `"s":"\udc00\ud800"`, column: "s", reason: "surrogate"},
	// In JSON the escape is kept as written; jsonb refuses it, which failed
	// the page on every run, whatever on_bad_record said.
	{id: "lonejson", raw: `"j":{"a":"\ud800"}`, pgColumn: "j", pgWhy: "surrogate",
		col: "j", sqlite: `{"a":"\ud800"}`},
	// timestamptz holds microseconds: PostgreSQL dropped the 789.
	{id: "nanos", raw: `"t":"2024-01-01T00:00:00.123456789Z"`, pgColumn: "t", pgWhy: "microsecond",
		col: "t", sqlite: "2024-01-01T00:00:00.123456789Z"},
}

func exactJob(url, target, table string) string {
	return fmt.Sprintf(`name: exact
source:
  url: %s
pagination:
  style: none
target:
  url: %s
  table: %s
  key: [id]
  on_bad_record: skip
  columns:
    id: id
    n: {path: n, type: integer}
    s: s
    t: {path: t, type: timestamp}
    j: {path: j, type: json}
`, url, target, table)
}

// Every stored value is the source's, exactly; a value the target cannot
// store exactly is a bad record naming its column (docs/job-file.md,
// "Columns"), on SQLite and PostgreSQL.
func TestTypesValuesExactOrRefused(t *testing.T) {
	var recs []string
	for _, v := range exactValues {
		recs = append(recs, `{"id":"`+v.id+`",`+v.raw+`}`)
	}
	body := "[" + strings.Join(recs, ",") + "]"
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}))
	for _, pg := range []bool{false, true} {
		t.Run(map[bool]string{false: "sqlite", true: "postgres"}[pg], func(t *testing.T) {
			dir := t.TempDir()
			target, table := "sqlite:out.db", "items"
			if pg {
				target = postgresURL(t)
				table = freshSchema(t, target) + ".items"
			}
			job := writeJob(t, dir, "job.yaml", exactJob(url, target, table))
			r := idemsync(t, dir, nil, "run", job, "--json")
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, parseRun(t, r).Error)
			}
			dead := map[int]string{}
			for _, d := range statusOf(t, dir, job, "--dead-letters").Dead {
				dead[d.Index] = d.Reason
			}
			stored := readExact(t, pg, dir, target, table)
			for i, v := range exactValues {
				column, reason := v.column, v.reason
				if pg && v.pgColumn != "" {
					column, reason = v.pgColumn, v.pgWhy
				}
				why, isDead := dead[i]
				switch {
				case column != "" && !isDead:
					t.Errorf("%s: stored %q, want a dead letter naming column %s", v.id, stored[v.id], column)
				case column != "" && (!strings.Contains(why, "column "+column) || !strings.Contains(why, reason)):
					t.Errorf("%s: dead letter %q, want column %s and %q", v.id, why, column, reason)
				case column == "" && isDead:
					t.Errorf("%s: dead-lettered: %s", v.id, why)
				case column == "" && v.col != "":
					want := v.sqlite
					if pg {
						want = v.want
					}
					if got := stored[v.id][v.col]; got != want {
						t.Errorf("%s: column %s holds %q, want %q", v.id, v.col, got, want)
					}
				}
			}
		})
	}
}

// readExact returns id → column → stored text of the table.
func readExact(t *testing.T, pg bool, dir, target, table string) map[string]map[string]string {
	t.Helper()
	q := "SELECT id, coalesce(CAST(n AS TEXT), ''), coalesce(s, ''), coalesce(CAST(t AS TEXT), ''), coalesce(CAST(j AS TEXT), '') FROM "
	out := map[string]map[string]string{}
	add := func(id, n, s, ts, j string) {
		out[id] = map[string]string{"n": n, "s": s, "t": ts, "j": j}
	}
	if !pg {
		rows, err := openSQLite(t, filepath.Join(dir, "out.db")).Query(q + table)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var id, n, s, ts, j string
			if err := rows.Scan(&id, &n, &s, &ts, &j); err != nil {
				t.Fatal(err)
			}
			add(id, n, s, ts, j)
		}
		return out
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	schema, name, _ := strings.Cut(table, ".")
	rows, err := conn.Query(ctx, q+pgx.Identifier{schema, name}.Sanitize())
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, n, s, ts, j string
		if err := rows.Scan(&id, &n, &s, &ts, &j); err != nil {
			t.Fatal(err)
		}
		add(id, n, s, ts, j)
	}
	return out
}

// A JSON number no column type stores exactly (an exponent of 5 digits,
// more than 1000 characters) widens an inferred column to text, kept as
// written: it failed the page as a bad record on every run
// (docs/job-file.md, "Without columns").
func TestTypesInferHugeNumberWidens(t *testing.T) {
	long := "1" + strings.Repeat("0", 1000)
	body := `[{"id":1,"n":5},{"id":2,"n":1e99999},{"id":3,"n":` + long + `}]`
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}))
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", fmt.Sprintf("name: huge\nsource:\n  url: %s\npagination:\n  style: none\ntarget:\n  url: sqlite:out.db\n  table: items\n  key: [id]\n", url))
	if got := runCode(t, dir, nil, 0, "run", job); got.Inserted != 3 {
		t.Fatalf("inserted %d, want 3", got.Inserted)
	}
	rows, err := openSQLite(t, filepath.Join(dir, "out.db")).Query("SELECT id, n, typeof(n) FROM items ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	want := []string{"5", "1e99999", long}
	for i := 0; rows.Next(); i++ {
		var id int
		var n, typ string
		if err := rows.Scan(&id, &n, &typ); err != nil {
			t.Fatal(err)
		}
		if n != want[i] || typ != "text" {
			t.Errorf("id %d: n = %.20q (%s), want %.20q as text", id, n, typ, want[i])
		}
	}
}
