package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// hostileValues are records whose values PostgreSQL cannot store, each
// with the column and the words its dead letter must name, between
// records every target stores.
var hostileValues = []struct {
	raw, column, reason string
	pgOnly              bool
}{
	{raw: `{"id":"k1","name":"fine","doc":{"a":1}}`},
	{raw: `{"id":"k2","name":"nul\u0000inside"}`, column: "name", reason: "NUL", pgOnly: true},
	{raw: `{"id":"` + strings.Repeat("x", 9000) + `","name":"long key"}`, column: "id", reason: "bytes", pgOnly: true},
	{raw: `{"id":"k4","name":"ok","doc":{"a":"\u0000"}}`, column: "doc", reason: "\\u0000", pgOnly: true},
	{raw: "{\"id\":\"k5\",\"name\":\"bad \xff utf8\"}", column: "name", reason: "UTF-8", pgOnly: true},
	{raw: `{"id":"k6","name":"escaped backslash","doc":{"a":"\\u0000"}}`},
}

func hostileJob(url, target, table, onBad string) string {
	return fmt.Sprintf(`name: hostile
source:
  url: %s
pagination:
  style: none
target:
  url: %s
  table: %s
  key: [id]
  on_bad_record: %s
  columns:
    id: id
    name: name
    doc: {path: doc, type: json}
`, url, target, table, onBad)
}

func serveHostile(t *testing.T) string {
	t.Helper()
	var recs []string
	for _, h := range hostileValues {
		recs = append(recs, h.raw)
	}
	body := "[" + strings.Join(recs, ",") + "]"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Values the target cannot store (NUL in text, \u0000 in JSON, invalid
// UTF-8, a key past the index limit) are bad records: dead-lettered with
// the column and reason under skip, naming the record, key and column
// under fail; the page never fails on every run. SQLite stores them all.
func TestTargetRejectedValues(t *testing.T) {
	url := serveHostile(t)
	for _, tg := range []struct{ name, url, table string }{{"sqlite", "sqlite:out.db", "items"}, {name: "postgres"}} {
		t.Run(tg.name, func(t *testing.T) {
			pg := tg.name == "postgres"
			table := tg.table
			if pg {
				tg.url = postgresURL(t)
				table = freshSchema(t, tg.url) + ".items"
			}
			want := 0
			for _, h := range hostileValues {
				if h.pgOnly && pg {
					want++
				}
			}
			dir := t.TempDir()
			job := writeJob(t, dir, "job.yaml", hostileJob(url, tg.url, table, "fail"))
			r := idemsync(t, dir, nil, "run", job, "--json")
			got := parseRun(t, r)
			if !pg {
				if r.code != 0 || got.Inserted != int64(len(hostileValues)) {
					t.Fatalf("sqlite stores every value: exit %d %+v", r.code, got)
				}
				return
			}
			if r.code != 1 || !strings.Contains(got.Error, "record 1 (key id=k2)") || !strings.Contains(got.Error, "column name") || !strings.Contains(got.Error, "NUL") {
				t.Fatalf("on_bad_record: fail: exit %d, want 1 naming record 1, its key, column and reason: %+v", r.code, got)
			}
			if n := len(readPostgresTexts(t, tg.url, table)); n != 0 {
				t.Errorf("a failed page wrote %d rows", n)
			}
			job = writeJob(t, dir, "job.yaml", hostileJob(url, tg.url, table, "skip"))
			got = runCode(t, dir, nil, 0, "run", job)
			if got.Skipped != int64(want) || got.Inserted != int64(len(hostileValues)-want) {
				t.Fatalf("on_bad_record: skip: %+v, want %d skipped", got, want)
			}
			st := statusOf(t, dir, job, "--dead-letters")
			byIndex := map[int]deadLetterJSON{}
			for _, d := range st.Dead {
				byIndex[d.Index] = d
			}
			for i, h := range hostileValues {
				d, dead := byIndex[i]
				switch {
				case !h.pgOnly && dead:
					t.Errorf("record %d dead-lettered: %+v", i, d)
				case h.pgOnly && !dead:
					t.Errorf("record %d not dead-lettered", i)
				case h.pgOnly && (!strings.Contains(d.Reason, "column "+h.column) || !strings.Contains(d.Reason, h.reason)):
					t.Errorf("record %d: reason %q, want column %s and %q", i, d.Reason, h.column, h.reason)
				}
			}
			texts := readPostgresTexts(t, tg.url, table)
			if texts["k6"] != `{"a": "\\u0000"}` || texts["k1"] != `{"a": 1}` {
				t.Errorf("stored docs: %q", texts)
			}
		})
	}
}

// readPostgresTexts returns id → doc::text of a table.
func readPostgresTexts(t *testing.T, pgURL, table string) map[string]string {
	t.Helper()
	schema, name, _ := strings.Cut(table, ".")
	out := map[string]string{}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT id, coalesce(doc::text, '') FROM "+pgx.Identifier{schema, name}.Sanitize())
	if err != nil {
		return out
	}
	defer rows.Close()
	for rows.Next() {
		var id, doc string
		if err := rows.Scan(&id, &doc); err != nil {
			t.Fatal(err)
		}
		out[id] = doc
	}
	return out
}
