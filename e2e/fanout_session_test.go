package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
)

// A child's walk of its parents is the same whichever host reads the
// parent table (docs/job-file.md, "Parent → child fan-out"): two hosts
// sharing the state in PostgreSQL, one whose connection says
// PGTZ=Asia/Kolkata and extra_float_digits 0, request the same URLs for
// the same parents and store the same parent values in the child rows.
// The parent table's values were read in the session's settings: the
// second host asked for /events/2024-05-01T17:30:00.5+05:30/items, sent
// ?x=0.3 for the parent whose x is 0.30000000000000004, and stored each
// child a second time under those texts.
func TestFanoutParentTextIgnoresSessionSettings(t *testing.T) {
	pg := postgresURL(t)
	skipOwnPostgresState(t)
	schema := freshSchema(t, pg)
	var mu sync.Mutex
	var asked []string
	api := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/events" {
			fmt.Fprint(w, `{"data":[{"at":"2024-05-01T12:00:00.5Z","x":0.30000000000000004},{"at":"2024-05-02T12:00:00Z","x":0.3}]}`)
			return
		}
		mu.Lock()
		asked = append(asked, r.URL.RequestURI())
		mu.Unlock()
		fmt.Fprint(w, `{"data":[{"id":1}]}`)
	}))
	dir := t.TempDir()
	writeJob(t, dir, "job.yaml", fmt.Sprintf(`name: tzfan
defaults:
  source: {base_url: %q, records: data, timeout: 5s}
  target: {url: %q}
resources:
  - name: events
    source: {path: /events}
    target:
      table: %s.events
      key: [at]
      columns: {at: {path: at, type: timestamp}, x: {path: x, type: real}}
  - name: items
    parent: events
    parent_rows: all
    source: {path: "/events/{parent.at}/items", query: {x: "{parent.x}"}}
    target:
      table: %s.items
      key: [event_at, event_x, id]
      columns: {event_at: {parent: at, type: text}, event_x: {parent: x, type: text}, id: {path: id, type: integer}}
`, api, pg, schema, schema))
	state := "IDEMSYNC_STATE=" + pgStateURL(t, pg, freshSchema(t, pg), "30s")
	run := func(env ...string) []string {
		t.Helper()
		mu.Lock()
		asked = nil
		mu.Unlock()
		if r := idemsync(t, dir, append([]string{state}, env...), "run", "job.yaml"); r.code != 0 {
			t.Fatalf("run %v: exit %d\n%s", env, r.code, r.stderr)
		}
		mu.Lock()
		defer mu.Unlock()
		out := slices.Clone(asked)
		sort.Strings(out)
		return out
	}
	a := run("PGTZ=UTC")
	b := run("PGTZ=Asia/Kolkata", "PGOPTIONS=-c extra_float_digits=0")
	if strings.Join(a, " ") != strings.Join(b, " ") {
		t.Errorf("the hosts asked for the children of the same parents differently:\n UTC:     %v\n Kolkata: %v", a, b)
	}
	if len(a) != 2 || a[0] == a[1] {
		t.Errorf("two parents, requests %v: want two different ones", a)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT event_at, event_x FROM "+pgx.Identifier{schema, "items"}.Sanitize()+" ORDER BY 1, 2")
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var at, x string
		err := r.Scan(&at, &x)
		return at + " " + x, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"2024-05-01T12:00:00.5+00:00 0.30000000000000004", "2024-05-02T12:00:00+00:00 0.3"}; !slices.Equal(got, want) {
		t.Errorf("child rows' parent values %q, want %q: one row per child, under one text", got, want)
	}
}
