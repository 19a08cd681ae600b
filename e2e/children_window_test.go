package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// storedLines is every order's lines in the target, "id:sku:qty" in the
// array's order of ids, by order id; orders with none are absent.
func storedLines(t *testing.T, tg childTarget) map[int][]string {
	t.Helper()
	db := tg.open(t)
	defer db.Close()
	rows, err := db.Query(`SELECT orders_id, id, sku, qty FROM ` + tg.tbl("order_lines") + ` ORDER BY orders_id, id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int][]string{}
	for rows.Next() {
		var order, id, qty int
		var sku string
		if err := rows.Scan(&order, &id, &sku, &qty); err != nil {
			t.Fatal(err)
		}
		out[order] = append(out[order], fmt.Sprintf("%d:%s:%d", id, sku, qty))
	}
	return out
}

// sameLines fails unless the target's lines are the API's, order by order.
func sameLines(t *testing.T, tg childTarget, api *fakeapi.API, what string) {
	t.Helper()
	got := storedLines(t, tg)
	want := map[int][]string{}
	for _, r := range api.Records() {
		for _, l := range r.Lines {
			want[r.ID] = append(want[r.ID], fmt.Sprintf("%d:%s:%d", l.ID, l.SKU, l.Qty))
		}
	}
	for id := range want {
		slices.SortFunc(want[id], func(a, b string) int {
			var x, y int
			fmt.Sscanf(a, "%d:", &x)
			fmt.Sscanf(b, "%d:", &y)
			return x - y
		})
	}
	for id, w := range want {
		if g := got[id]; !slices.Equal(g, w) {
			t.Fatalf("%s: order %d has lines %q in the target, %q at the source", what, id, g, w)
		}
	}
	for id, g := range got {
		if _, ok := want[id]; !ok {
			t.Fatalf("%s: order %d has lines %q in the target, none at the source", what, id, g)
		}
	}
}

// An incremental walk (hwm on updated_at) writes child tables as a full
// walk does (docs/job-file.md, "Child tables"): the first run loads every
// order's arrays; a later run fetches only the orders changed since the
// saved mark, and their arrays (grown, shrunk, reordered, changed) replace
// their child rows; a run with nothing new rewrites no child row.
func TestChildTablesIncremental(t *testing.T) {
	dir := t.TempDir()
	for _, tg := range childTargets(t, dir) {
		t.Run(tg.name, func(t *testing.T) {
			api, url, rng, next := childShop(t, 60, 13)
			job := childJob(url, tg, "keep", "")
			job = strings.Replace(job, url+"/page", url+"/hwm", 1)
			job = strings.Replace(job, "  style: page\n  size_param: per_page\n  size: 25\n",
				"  style: hwm\n  field: updated_at\n  param: since\n  size_param: limit\n  size: 25\n", 1)
			file := writeJob(t, dir, tg.name+"-hwm.yaml", job)

			delRun(t, dir, 0, "run", file)
			sameParents(t, childCheck(t, tg, "first load"), api)
			sameLines(t, tg, api, "first load")

			changed := childMutate(rng, api, &next, 15)
			r := delRun(t, dir, 0, "run", file)
			var res struct{ Records int64 }
			if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
				t.Fatalf("run --json: %v\n%s", err, r.stdout)
			}
			if res.Records >= 60 {
				t.Fatalf("the incremental run fetched %d records: not incremental", res.Records)
			}
			sameParents(t, childCheck(t, tg, fmt.Sprintf("after changing %v", changed)), api)
			sameLines(t, tg, api, fmt.Sprintf("after changing %v", changed))

			before := childSynced(t, tg)
			time.Sleep(20 * time.Millisecond) // a rewrite would show a later synced_at
			r = delRun(t, dir, 0, "run", file)
			if after := childSynced(t, tg); !mapsEqual(before, after) {
				t.Fatalf("an incremental run with nothing new rewrote child rows:\n%s", r.stdout)
			}
			childCheck(t, tg, "incremental run with nothing new")
		})
	}
}
