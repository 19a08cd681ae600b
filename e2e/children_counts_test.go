package e2e

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// childCounts is a run's "children" as the run's --json and status --json
// print it: rows inserted and deleted per child table.
type childCounts map[string]struct{ Inserted, Deleted int64 }

// childTableSizes counts the rows of each child table of childJob.
func childTableSizes(t *testing.T, tg childTarget) map[string]int64 {
	t.Helper()
	db := tg.open(t)
	defer db.Close()
	out := map[string]int64{}
	for _, name := range []string{"order_lines", "order_line_discounts", "order_tags"} {
		var n int64
		if err := db.QueryRow(`SELECT count(*) FROM ` + tg.tbl(name)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		out[name] = n
	}
	return out
}

// runChildren runs the job and returns the run's child table counts.
func runChildren(t *testing.T, dir, job string, args ...string) childCounts {
	t.Helper()
	r := delRun(t, dir, 0, append([]string{"run", job}, args...)...)
	var res struct{ Children childCounts }
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("run --json: %v\n%s", err, r.stdout)
	}
	return res.Children
}

// The run's JSON and status count the rows each child table got inserted
// and deleted (docs/job-file.md, "Child tables"): a first load inserts
// every child row, a run over changed arrays moves each table by its
// inserted minus its deleted rows, an unchanged re-sync counts none, and
// status shows the last run's counts as the run printed them.
func TestChildTablesCounts(t *testing.T) {
	dir := t.TempDir()
	for _, tg := range childTargets(t, dir) {
		t.Run(tg.name, func(t *testing.T) {
			api, url, rng, next := childShop(t, 60, 11)
			job := writeJob(t, dir, tg.name+"-counts.yaml", childJob(url, tg, "keep", ""))

			first := runChildren(t, dir, job)
			sizes := childTableSizes(t, tg)
			for name, n := range sizes {
				if c := first[name]; c.Inserted != n || c.Deleted != 0 {
					t.Fatalf("first load: %s counted %+v, the table holds %d rows", name, c, n)
				}
			}

			childMutate(rng, api, &next, 20)
			changed := runChildren(t, dir, job, "--full")
			after := childTableSizes(t, tg)
			moved := false
			for name, n := range after {
				c := changed[name]
				if sizes[name]+c.Inserted-c.Deleted != n {
					t.Fatalf("after changes: %s holds %d rows, was %d, counted %+v", name, n, sizes[name], c)
				}
				moved = moved || c.Deleted > 0
			}
			if !moved {
				t.Fatalf("20 changed orders deleted no child row: %+v", changed)
			}

			st := idemsync(t, dir, nil, "status", job, "--json")
			var status struct {
				Jobs []struct {
					LastRun struct{ Children childCounts } `json:"last_run"`
				}
			}
			if err := json.Unmarshal([]byte(st.stdout), &status); err != nil || len(status.Jobs) != 1 {
				t.Fatalf("status --json: %v\n%s", err, st.stdout)
			}
			if got := status.Jobs[0].LastRun.Children; !reflect.DeepEqual(got, changed) {
				t.Fatalf("status shows %+v, the run printed %+v\n%s", got, changed, st.stdout)
			}
			text := idemsync(t, dir, nil, "status", job)
			for name, c := range changed {
				if want := fmt.Sprintf("child rows: %d inserted, %d deleted", c.Inserted, c.Deleted); !strings.Contains(text.stdout, name) || !strings.Contains(text.stdout, want) {
					t.Fatalf("status does not show %s: %s\n%s", name, want, text.stdout)
				}
			}

			if again := runChildren(t, dir, job, "--full"); len(again) != 0 {
				t.Fatalf("an unchanged re-sync counted child rows: %+v", again)
			}
		})
	}
}
