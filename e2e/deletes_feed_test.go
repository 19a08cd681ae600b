package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// The change feed's D events of a sweep (docs/changes.md, "What each crash
// leaves"): one per row the sweep removed or marked, none for a row that
// stays (pending, or live), and none twice when the sweep is killed inside
// its transaction and again after it committed, before the run completed,
// then run again. A record that comes back gets its I (hard) or U (soft),
// and the passes after it record no D for the rows already gone.
func TestSweepFeedDeletesOnce(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the failpoint's SIGKILL is checked through Unix wait status")
	}
	eachDelTarget(t, []string{"hard", "soft"}, func(t *testing.T, dir, mode string, tg delTarget) {
		api := newDelAPI(t, 30)
		job := writeJob(t, dir, tg.name+".yaml", withTotal(delJob(api.URL, tg, mode, "  changes: true\n", "state: "+tg.name+".db\n")))
		delPending(t, dir, 0, "run", job)
		gone := api.remove(25, 26)
		delPending(t, dir, 2, "run", job)
		if n := feedOps(t, dir, tg)["D"]; len(n) != 0 {
			t.Fatalf("D events before any row was removed: %v", n)
		}
		for _, step := range []string{"sweep-applied", "swept"} {
			if err := runKilled(t, dir, job, "IDEMSYNC_TEST_FAILPOINT="+step); err != nil {
				t.Fatalf("kill at %s: %v", step, err)
			}
		}
		delRun(t, dir, 0, "run", job)
		ops := feedOps(t, dir, tg)
		if d := sorted(ops["D"]); fmt.Sprint(d) != "[25 26]" {
			t.Fatalf("after a sweep killed inside its transaction, then after its commit, and run again: D events %v, want [25 26] once each", d)
		}
		api.restore(gone[0]) // 25 back, unchanged
		delRun(t, dir, 0, "run", job)
		delRun(t, dir, 0, "run", job)
		sameIDs(t, "after 25 came back", liveIDs(tg.rows(t)), api.live())
		ops = feedOps(t, dir, tg)
		if d := sorted(ops["D"]); fmt.Sprint(d) != "[25 26]" {
			t.Fatalf("after two more passes: D events %v, want [25 26] once each", d)
		}
		back := map[string]string{"hard": "I", "soft": "U"}[mode]
		if n := count(ops[back], 25); n != map[string]int{"hard": 2, "soft": 1}[mode] {
			t.Fatalf("record 25 came back: %d %s events for it, want one more (%v)", n, back, ops)
		}
	})
}

// sorted returns ids sorted.
func sorted(ids []int) []int {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

// count returns how many times id is in ids.
func count(ids []int, id int) int {
	n := 0
	for _, v := range ids {
		if v == id {
			n++
		}
	}
	return n
}

// feedOps reads job del's events from the target's feed: the keys of
// each operation, in event order.
func feedOps(t *testing.T, dir string, tg delTarget) map[string][]int {
	t.Helper()
	out := map[string][]int{}
	add := func(key, op string) {
		var id int
		if _, err := fmt.Sscan(key, &id); err != nil {
			t.Fatalf("event key %q: %v", key, err)
		}
		out[op] = append(out[op], id)
	}
	const q = `SELECT CAST(key AS TEXT), CAST(op AS TEXT) FROM %sidemsync_changes WHERE job = 'del' ORDER BY seq`
	if tg.name == "sqlite" {
		db, err := sql.Open("sqlite", filepath.Join(dir, "out.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		rows, err := db.Query(fmt.Sprintf(q, ""))
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var k, op string
			if err := rows.Scan(&k, &op); err != nil {
				t.Fatal(err)
			}
			add(k, op)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, tg.url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	schema, _, _ := strings.Cut(tg.table, ".")
	rows, err := conn.Query(ctx, fmt.Sprintf(q, pgx.Identifier{schema}.Sanitize()+"."))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var k, op string
		if err := rows.Scan(&k, &op); err != nil {
			t.Fatal(err)
		}
		add(k, op)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
