package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sinktest"
	"github.com/idemsync/idemsync/sink/sqlite"
)

// TestFeedRunInTriggers checks what writing the run into the feed's
// triggers at each Prepare (docs/changes.md) does to other connections
// and to a feed of an earlier build: a statement another connection
// prepared before the run changed stamps the new run, and triggers that
// looked the run up in idemsync_change_jobs keep working until the next
// Prepare replaces them.
func TestFeedRunInTriggers(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "target.db")
	s, err := sqlite.OpenTarget(ctx, contract.Conn{URL: "sqlite:" + path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.SetMaxOpenConns(1) // the prepared statement stays on one connection
	tbl := &contract.Table{Name: "fed", Key: []string{"id"}, Create: true, Columns: []contract.Column{
		sinktest.Col("id", contract.TypeText), sinktest.Col("note", contract.TypeText)}}
	tbl.Changes = &contract.Changes{Job: "j", Resource: "fed", Run: 1}
	if err := s.Prepare(ctx, tbl); err != nil {
		t.Fatal(err)
	}
	ins, err := other.Prepare(`INSERT INTO fed (id, note, "` + contract.ColHash + `") VALUES (?, 'another tool', 'h')`)
	if err != nil {
		t.Fatal(err)
	}
	defer ins.Close()
	write := func(id string) {
		t.Helper()
		if _, err := ins.Exec(id); err != nil {
			t.Fatalf("another connection's insert of %s: %v", id, err)
		}
	}
	runs := func() string {
		t.Helper()
		rows, err := other.Query(`SELECT key || ':' || run FROM idemsync_changes WHERE job = 'j' ORDER BY seq`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var e string
			if err := rows.Scan(&e); err != nil {
				t.Fatal(err)
			}
			out = append(out, e)
		}
		return strings.Join(out, " ")
	}

	write("a")
	tbl.Changes.Run = 2
	if err := s.Prepare(ctx, tbl); err != nil {
		t.Fatal(err)
	}
	write("b")
	if got, want := runs(), "a:1 b:2"; got != want {
		t.Fatalf("events (key:run) %q, want %q: a statement prepared before the run changed stamps the new run", got, want)
	}

	// The insert trigger of an earlier build, which read the run per row.
	for _, q := range []string{`DROP TRIGGER idemsync_feed_ins_fed`,
		`CREATE TRIGGER "idemsync_feed_ins_fed" AFTER INSERT ON "fed" BEGIN INSERT INTO idemsync_changes (job, resource, key, op, hash, version, run, row, at) VALUES ('j', 'fed', CAST(NEW."id" AS TEXT), 'I', NEW."` + contract.ColHash + `", NULL, (SELECT run FROM idemsync_change_jobs WHERE job = 'j'), NULL, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)); END`} {
		if _, err := other.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	write("c")
	tbl.Changes.Run = 3
	if err := s.Prepare(ctx, tbl); err != nil {
		t.Fatal(err)
	}
	write("d")
	if got, want := runs(), "a:1 b:2 c:2 d:3"; got != want {
		t.Fatalf("events (key:run) %q, want %q across the earlier build's trigger", got, want)
	}
	var q string
	if err := other.QueryRow(`SELECT sql FROM sqlite_schema WHERE name = 'idemsync_feed_ins_fed'`).Scan(&q); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(q, "idemsync_change_jobs") {
		t.Errorf("the earlier build's trigger was kept after Prepare: %s", q)
	}
}
