package e2e

import (
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql for the PostgreSQL child tables

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// Child tables (docs/job-file.md, "Child tables"): the orders' lines (keyed
// by their id) with each line's discounts (an array of strings, keyed by
// position), and the orders' tags (position), on SQLite and PostgreSQL.

var childSeeds = flag.Int("child-seeds", envInt("IDEMSYNC_CHILD_SEEDS", 6), "child tables model test: how many seeds (also IDEMSYNC_CHILD_SEEDS)")
var childSeed = flag.Int64("child-seed", -1, "child tables model test: run only this seed")

// childTarget is a database the child table tests write to, and how to
// read it back with database/sql.
type childTarget struct {
	name, url, schema string // schema: "" on SQLite
	open              func(t *testing.T) *sql.DB
}

// tbl is a table of the target as SQL names it.
func (tg childTarget) tbl(name string) string {
	if tg.schema == "" {
		return `"` + name + `"`
	}
	return `"` + tg.schema + `"."` + name + `"`
}

// childTargets returns an SQLite target in dir and, when the server is
// configured, a PostgreSQL schema of the test's own.
func childTargets(t *testing.T, dir string) []childTarget {
	out := []childTarget{{name: "sqlite", url: "sqlite:out.db", open: func(t *testing.T) *sql.DB {
		db, err := sql.Open("sqlite", filepath.Join(dir, "out.db"))
		if err != nil {
			t.Fatal(err)
		}
		return db
	}}}
	if u := os.Getenv("IDEMSYNC_TEST_POSTGRES_URL"); u != "" {
		schema := freshSchema(t, u)
		out = append(out, childTarget{name: "postgres", url: u, schema: schema, open: func(t *testing.T) *sql.DB {
			db, err := sql.Open("pgx", u)
			if err != nil {
				t.Fatal(err)
			}
			return db
		}})
	}
	return out
}

// childJob is the job of the child table tests; extra goes under target.
func childJob(apiURL string, tg childTarget, deletes, extra string) string {
	table := "orders"
	if tg.schema != "" {
		table = tg.schema + ".orders"
	}
	return fmt.Sprintf(`name: shop
state: %s.db
source:
  url: %s/page
  records: data
  timeout: 5s
pagination:
  style: page
  size_param: per_page
  size: 25
retry:
  attempts: 6
  min_wait: 10ms
  max_wait: 200ms
target:
  url: %s
  table: %s
  key: [id]
  columns:
    id: {path: id, type: integer}
    name: name
    tags_json: {path: tags, type: json}
    lines_json: {path: lines, type: json}
  deletes: %s
  max_delete_ratio: 0.9
  children:
    lines:
      path: lines
      table: order_lines
      key: id
      columns:
        id: {path: id, type: integer}
        sku: sku
        qty: {path: qty, type: integer}
      children:
        discounts:
          path: discounts
          table: order_line_discounts
          columns:
            code: "@this"
    tags:
      path: tags
      table: order_tags
      columns:
        tag: "@this"
%s`, tg.name, apiURL, tg.url, table, deletes, extra)
}

// childLines gives every record lines (some none, some absent), with ids
// unique across records, drawn from rng.
func childLines(rng *rand.Rand, api *fakeapi.API, next *int) {
	for _, r := range api.Records() {
		api.Update(r.ID, func(r *fakeapi.Record) { r.Lines = drawLines(rng, next) })
	}
}

// childShop serves n orders of seed, their lines drawn from seed too
// (childLines): the API, its URL, the draw and the next line's id, for
// childMutate and drawLines to go on from.
func childShop(t *testing.T, n int, seed int64) (api *fakeapi.API, url string, rng *rand.Rand, next int) {
	t.Helper()
	api, url = startAPI(t, fakeapi.Options{Records: n, Seed: seed})
	rng = rand.New(rand.NewPCG(uint64(seed), uint64(seed)))
	childLines(rng, api, &next)
	return api, url, rng, next
}

func drawLines(rng *rand.Rand, next *int) []fakeapi.Line {
	if rng.IntN(8) == 0 {
		return nil // no lines key at all
	}
	lines := []fakeapi.Line{}
	for range rng.IntN(5) {
		*next++
		lines = append(lines, fakeapi.Line{ID: *next, SKU: fmt.Sprintf("sku-%d", rng.IntN(50)), Qty: 1 + rng.IntN(9), Discounts: drawCodes(rng)})
	}
	return lines
}

func drawCodes(rng *rand.Rand) []string {
	codes := []string{}
	for range rng.IntN(3) {
		codes = append(codes, fmt.Sprintf("d%d", rng.IntN(4)))
	}
	return codes
}

// childMutate changes the arrays of n random records: lines grow, shrink,
// reorder or change, discounts and tags are redrawn or reordered; it
// returns the ids changed.
func childMutate(rng *rand.Rand, api *fakeapi.API, next *int, n int) []int {
	recs := api.Records()
	var ids []int
	for range n {
		if len(recs) == 0 {
			break
		}
		id := recs[rng.IntN(len(recs))].ID
		ids = append(ids, id)
		api.Update(id, func(r *fakeapi.Record) {
			switch rng.IntN(6) {
			case 0: // grow
				*next++
				r.Lines = append(r.Lines, fakeapi.Line{ID: *next, SKU: "new", Qty: 1, Discounts: drawCodes(rng)})
			case 1: // shrink
				if len(r.Lines) > 0 {
					i := rng.IntN(len(r.Lines))
					r.Lines = slices.Delete(r.Lines, i, i+1+rng.IntN(len(r.Lines)-i))
				}
			case 2: // reorder
				rng.Shuffle(len(r.Lines), func(i, j int) { r.Lines[i], r.Lines[j] = r.Lines[j], r.Lines[i] })
			case 3: // an element changes, its discounts too
				if len(r.Lines) > 0 {
					l := &r.Lines[rng.IntN(len(r.Lines))]
					l.Qty++
					l.Discounts = drawCodes(rng)
				}
			case 4: // tags
				rng.Shuffle(len(r.Tags), func(i, j int) { r.Tags[i], r.Tags[j] = r.Tags[j], r.Tags[i] })
				if rng.IntN(2) == 0 {
					r.Tags = append(r.Tags, "x")
				} else if len(r.Tags) > 0 {
					r.Tags = r.Tags[1:]
				}
			default: // all new
				r.Lines = drawLines(rng, next)
			}
		})
	}
	return ids
}

// childState is what the invariant compares: every child row, keyed by
// its table and key, with its values and its mark.
type childState map[string]string

// childExpected derives the child rows the stored parents' arrays hold
// (lines_json, tags_json), each marked as its parent is; and the parents'
// ids.
func childExpected(t *testing.T, tg childTarget, db *sql.DB) (childState, map[int]bool) {
	t.Helper()
	del := "false"
	if childSoft(db, tg) {
		del = "_idemsync_deleted_at IS NOT NULL"
	}
	rows, err := db.Query(`SELECT id, tags_json, lines_json, ` + del + ` FROM ` + tg.tbl("orders"))
	if err != nil {
		if strings.Contains(err.Error(), "no such table") || strings.Contains(err.Error(), "does not exist") {
			return childState{}, map[int]bool{}
		}
		t.Fatal(err)
	}
	defer rows.Close()
	want, ids := childState{}, map[int]bool{}
	for rows.Next() {
		var id int
		var tags, lines sql.NullString
		var marked bool
		if err := rows.Scan(&id, &tags, &lines, &marked); err != nil {
			t.Fatal(err)
		}
		ids[id] = true
		var tl []string
		var ll []fakeapi.Line
		if tags.Valid {
			if err := json.Unmarshal([]byte(tags.String), &tl); err != nil {
				t.Fatalf("tags_json of %d: %v", id, err)
			}
		}
		if lines.Valid {
			if err := json.Unmarshal([]byte(lines.String), &ll); err != nil {
				t.Fatalf("lines_json of %d: %v", id, err)
			}
		}
		for pos, tag := range tl {
			want[fmt.Sprintf("order_tags %d|%d", id, pos)] = fmt.Sprintf("%s %t", tag, marked)
		}
		for _, l := range ll {
			want[fmt.Sprintf("order_lines %d|%d", id, l.ID)] = fmt.Sprintf("%s|%d %t", l.SKU, l.Qty, marked)
			for pos, c := range l.Discounts {
				want[fmt.Sprintf("order_line_discounts %d|%d|%d", id, l.ID, pos)] = fmt.Sprintf("%s %t", c, marked)
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return want, ids
}

// childSoft reports whether the orders table marks deleted rows.
func childSoft(db *sql.DB, tg childTarget) bool {
	r, err := db.Query(`SELECT _idemsync_deleted_at FROM ` + tg.tbl("orders") + ` WHERE 1 = 0`)
	if err != nil {
		return false
	}
	r.Close()
	return true
}

// childActual reads the three child tables.
func childActual(t *testing.T, tg childTarget, db *sql.DB) childState {
	t.Helper()
	del := "false"
	if childSoft(db, tg) {
		del = "_idemsync_deleted_at IS NOT NULL"
	}
	got := childState{}
	for _, q := range []struct{ table, sel string }{
		{"order_tags", `orders_id || '|' || _idemsync_pos, tag`},
		{"order_lines", `orders_id || '|' || id, sku || '|' || qty`},
		{"order_line_discounts", `orders_id || '|' || order_lines_id || '|' || _idemsync_pos, code`},
	} {
		rows, err := db.Query(`SELECT ` + q.sel + `, ` + del + ` FROM ` + tg.tbl(q.table))
		if err != nil {
			if strings.Contains(err.Error(), "no such table") || strings.Contains(err.Error(), "does not exist") {
				continue
			}
			t.Fatal(err)
		}
		for rows.Next() {
			var k, v string
			var marked bool
			if err := rows.Scan(&k, &v, &marked); err != nil {
				t.Fatal(err)
			}
			key := q.table + " " + k
			if _, dup := got[key]; dup {
				t.Fatalf("duplicate child row %s", key)
			}
			got[key] = fmt.Sprintf("%s %t", v, marked)
		}
		rows.Close()
	}
	return got
}

// childCheck fails unless every child table equals the arrays of the
// stored parents, no child row is an orphan, and each is marked as its
// parent is; it returns the stored parents' ids.
func childCheck(t *testing.T, tg childTarget, what string) map[int]bool {
	t.Helper()
	db := tg.open(t)
	defer db.Close()
	want, ids := childExpected(t, tg, db)
	got := childActual(t, tg, db)
	var diff []string
	for k, v := range want {
		if got[k] != v {
			diff = append(diff, fmt.Sprintf("%s: got %q, want %q", k, got[k], v))
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			diff = append(diff, fmt.Sprintf("%s: %q is not in its parent's array (orphan or vanished element)", k, v))
		}
	}
	if len(diff) > 0 {
		slices.Sort(diff)
		t.Fatalf("%s: %d child rows differ from the stored parents' arrays:\n%s", what, len(diff), strings.Join(diff[:min(len(diff), 20)], "\n"))
	}
	return ids
}

// childSynced is every child row's _idemsync_synced_at, by table and key:
// what a run that writes nothing to the child tables leaves as it is.
func childSynced(t *testing.T, tg childTarget) map[string]string {
	t.Helper()
	db := tg.open(t)
	defer db.Close()
	out := map[string]string{}
	for _, q := range []struct{ table, key string }{
		{"order_tags", `orders_id || '|' || _idemsync_pos`},
		{"order_lines", `orders_id || '|' || id`},
		{"order_line_discounts", `orders_id || '|' || order_lines_id || '|' || _idemsync_pos`},
	} {
		rows, err := db.Query(`SELECT ` + q.key + `, CAST(_idemsync_synced_at AS TEXT) FROM ` + tg.tbl(q.table))
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var k, v string
			if err := rows.Scan(&k, &v); err != nil {
				t.Fatal(err)
			}
			out[q.table+" "+k] = v
		}
		rows.Close()
	}
	return out
}

// sameParents fails unless the stored live parents are the API's records.
func sameParents(t *testing.T, ids map[int]bool, api *fakeapi.API) {
	t.Helper()
	recs := api.Records()
	if len(ids) != len(recs) {
		t.Fatalf("%d parents stored, the source holds %d", len(ids), len(recs))
	}
	for _, r := range recs {
		if !ids[r.ID] {
			t.Fatalf("order %d is not stored", r.ID)
		}
	}
}

// The arrays of a first load, of a run after they grew, shrank, were
// reordered and changed, and of an unchanged re-sync, which rewrites no
// child row.
func TestChildTables(t *testing.T) {
	dir := t.TempDir()
	for _, tg := range childTargets(t, dir) {
		t.Run(tg.name, func(t *testing.T) {
			api, url, rng, next := childShop(t, 60, 7)
			job := writeJob(t, dir, tg.name+".yaml", childJob(url, tg, "keep", ""))
			delRun(t, dir, 0, "run", job)
			sameParents(t, childCheck(t, tg, "first load"), api)
			db := tg.open(t)
			if n := len(childActual(t, tg, db)); n < 100 {
				t.Fatalf("only %d child rows after the first load", n)
			}
			db.Close()

			changed := childMutate(rng, api, &next, 25)
			delRun(t, dir, 0, "run", job, "--full")
			sameParents(t, childCheck(t, tg, fmt.Sprintf("after changing %v", changed)), api)

			before := childSynced(t, tg)
			time.Sleep(20 * time.Millisecond) // a rewrite would show a later synced_at
			r := delRun(t, dir, 0, "run", job, "--full")
			if after := childSynced(t, tg); !mapsEqual(before, after) {
				t.Fatalf("an unchanged re-sync rewrote child rows: %d before, %d after\n%s", len(before), len(after), r.stdout)
			}
			childCheck(t, tg, "unchanged re-sync")

			// --verify rewrites the children of every parent: a child row
			// changed outside idemsync is repaired.
			db = tg.open(t)
			if _, err := db.Exec(`DELETE FROM ` + tg.tbl("order_lines")); err != nil {
				t.Fatal(err)
			}
			db.Close()
			delRun(t, dir, 0, "run", job, "--full", "--verify")
			childCheck(t, tg, "--verify after the lines were deleted by hand")
		})
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// A parent deleted at the source takes its child rows with it (hard), or
// has them marked with it (soft), in the sweep's own transaction; a
// parent that comes back brings its children back unmarked.
func TestChildTablesDeletes(t *testing.T) {
	for _, mode := range []string{"hard", "soft"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			for _, tg := range childTargets(t, dir) {
				t.Run(tg.name, func(t *testing.T) {
					api, url, _, _ := childShop(t, 40, 3)
					job := writeJob(t, dir, tg.name+".yaml", childJob(url, tg, mode, ""))
					delRun(t, dir, 0, "run", job)
					var gone []fakeapi.Record
					for _, id := range []int{2, 17, 33} {
						r, _ := api.Record(id)
						gone = append(gone, r)
						api.Delete(id)
					}
					delRun(t, dir, 0, "run", job, "--full") // the first pass to miss them: pending
					delRun(t, dir, 0, "run", job, "--full")
					ids := childCheck(t, tg, "after the deletions")
					db := tg.open(t)
					defer db.Close()
					var left int
					q := `SELECT count(*) FROM ` + tg.tbl("order_lines") + ` WHERE orders_id IN (2, 17, 33)`
					if mode == "soft" {
						q += ` AND _idemsync_deleted_at IS NULL`
						if len(ids) != 40 {
							t.Fatalf("soft: %d parents stored, want 40 (3 marked)", len(ids))
						}
					} else if len(ids) != 37 {
						t.Fatalf("hard: %d parents stored, want 37", len(ids))
					}
					if err := db.QueryRow(q).Scan(&left); err != nil || left != 0 {
						t.Fatalf("%d live lines of deleted orders left (%v)", left, err)
					}
					var lines int
					for _, r := range gone {
						lines += len(r.Lines)
					}
					if lines == 0 {
						t.Fatal("the deleted orders had no lines: the test proves nothing")
					}
				})
			}
		})
	}
}

// A tombstone deletes (hard) or marks (soft) its parent's child rows in
// its page's own write.
func TestChildTablesTombstone(t *testing.T) {
	for _, mode := range []string{"hard", "soft"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			for _, tg := range childTargets(t, dir) {
				t.Run(tg.name, func(t *testing.T) {
					api, url, rng, next := childShop(t, 30, 5)
					api.Update(4, func(r *fakeapi.Record) {
						r.Lines = drawLines(rng, &next)
						r.Lines = append(r.Lines, fakeapi.Line{ID: 9999, SKU: "t", Qty: 1})
					})
					job := writeJob(t, dir, tg.name+".yaml", childJob(url, tg, mode, "  tombstone: {field: name, value: gone}\n"))
					delRun(t, dir, 0, "run", job)
					api.Update(4, func(r *fakeapi.Record) { r.Name = "gone" })
					delRun(t, dir, 0, "run", job)
					db := tg.open(t)
					defer db.Close()
					var n int
					q := `SELECT count(*) FROM ` + tg.tbl("order_lines") + ` WHERE orders_id = 4`
					if mode == "soft" {
						q += ` AND _idemsync_deleted_at IS NULL`
					}
					if err := db.QueryRow(q).Scan(&n); err != nil || n != 0 {
						t.Fatalf("%d live lines of the tombstoned order (%v)", n, err)
					}
					if mode == "soft" {
						if err := db.QueryRow(`SELECT count(*) FROM ` + tg.tbl("order_lines") + ` WHERE orders_id = 4`).Scan(&n); err != nil || n == 0 {
							t.Fatalf("soft: the tombstoned order's lines are gone, want them marked (%d, %v)", n, err)
						}
					}
				})
			}
		})
	}
}

// The model: arrays that grow, shrink and reorder between runs, runs
// SIGKILLed at random points; at every exit, 0 or killed, every child
// table equals the arrays of the stored parents, with no orphan.
func TestChildTablesModel(t *testing.T) {
	seeds := []int64{}
	if *childSeed >= 0 {
		seeds = append(seeds, *childSeed)
	} else {
		for s := range *childSeeds {
			seeds = append(seeds, int64(s+1))
		}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			repro := fmt.Sprintf("go test ./e2e -run 'TestChildTablesModel/%d$' -child-seed=%d -count=1", seed, seed)
			defer func() {
				if t.Failed() {
					t.Logf("reproduce: %s", repro)
				}
			}()
			dir := t.TempDir()
			rng := rand.New(rand.NewPCG(uint64(seed), 29))
			for _, tg := range childTargets(t, dir) {
				t.Run(tg.name, func(t *testing.T) {
					api, url := startAPI(t, fakeapi.Options{Records: 50 + rng.IntN(50), Seed: seed, PageSize: 10})
					api.SetLatency(time.Duration(rng.IntN(3)) * time.Millisecond)
					next := 0
					childLines(rng, api, &next)
					mode := []string{"keep", "soft", "hard"}[rng.IntN(3)]
					job := writeJob(t, dir, tg.name+".yaml", childJob(url, tg, mode, ""))
					exits := map[int]int{}
					for round := range 12 {
						childMutate(rng, api, &next, rng.IntN(15))
						if rng.IntN(4) == 0 {
							api.Add(1 + rng.IntN(3))
						}
						if rng.IntN(5) == 0 {
							recs := api.Records()
							api.Delete(recs[rng.IntN(len(recs))].ID)
						}
						var kill func() bool
						if rng.IntN(2) == 0 {
							left := 5 + rng.IntN(150) // polls, a millisecond each
							kill = func() bool { left--; return left <= 0 }
						}
						args := []string{"run", job}
						if rng.IntN(2) == 0 {
							args = append(args, "--full")
						}
						ex := modelInvoke(t, dir, kill, args...)
						exits[ex.code]++
						if ex.code != 0 && ex.code != -1 {
							t.Fatalf("round %d (%s): exit %d\n%s", round, mode, ex.code, ex.stderr)
						}
						childCheck(t, tg, fmt.Sprintf("round %d (%s, exit %d)", round, mode, ex.code))
					}
					// Finished without a kill: the tables hold the source.
					// The first of these runs may continue a killed pass,
					// which misses a record that a deletion since moved
					// back across a page it had read (docs/guarantees.md,
					// "What exit 0 cannot prove"); the second starts from
					// the first page.
					var ids map[int]bool
					for last := range 2 {
						ex := modelInvoke(t, dir, nil, "run", job, "--full")
						if ex.code != 0 {
							t.Fatalf("last runs, %d: exit %d\n%s", last, ex.code, ex.stderr)
						}
						ids = childCheck(t, tg, fmt.Sprintf("last runs, %d", last))
					}
					if mode == "keep" || mode == "hard" {
						for _, r := range api.Records() {
							if !ids[r.ID] {
								t.Fatalf("order %d is not stored after a completed run", r.ID)
							}
						}
					}
					if exits[0] == 0 {
						t.Fatalf("no run of the seed exited 0: %v", exits)
					}
					t.Logf("%s: exits %v", mode, exits)
				})
			}
		})
	}
}

// linesPerOrder counts the live lines of each order (by the key columns
// named in by) in the target.
func linesPerOrder(t *testing.T, tg childTarget, by string) map[string]int {
	t.Helper()
	db := tg.open(t)
	defer db.Close()
	rows, err := db.Query(`SELECT ` + by + `, count(*) FROM ` + tg.tbl("order_lines") + ` GROUP BY ` + by)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var k string
		var n int
		if err := rows.Scan(&k, &n); err != nil {
			t.Fatal(err)
		}
		out[k] = n
	}
	return out
}

// A replay rewrites the parents of its pages, and with them their child
// rows; show lists the child tables after the job's table.
func TestChildTablesReplayShow(t *testing.T) {
	dir := t.TempDir()
	for _, tg := range childTargets(t, dir) {
		t.Run(tg.name, func(t *testing.T) {
			api, url, _, next := childShop(t, 60, 11)
			job := writeJob(t, dir, tg.name+".yaml", childJob(url, tg, "keep", ""))
			delRun(t, dir, 0, "run", job)
			for _, r := range api.Records() { // every order gains a line
				api.Update(r.ID, func(r *fakeapi.Record) {
					next++
					r.Lines = append(r.Lines, fakeapi.Line{ID: next, SKU: "replayed", Qty: 1})
				})
			}
			delRun(t, dir, 0, "replay", job, "--from", "1", "--to", "2") // ids 1..50
			childCheck(t, tg, "after the replay")
			got := linesPerOrder(t, tg, "orders_id")
			for _, r := range api.Records() {
				want := len(r.Lines)
				if r.ID > 50 {
					want-- // page 3 was not replayed
				}
				if got[fmt.Sprint(r.ID)] != want {
					t.Fatalf("order %d: %d lines stored, want %d", r.ID, got[fmt.Sprint(r.ID)], want)
				}
			}

			var shown struct {
				Table    string `json:"table"`
				Children []struct {
					Table   string              `json:"table"`
					Columns []string            `json:"columns"`
					Rows    []map[string]string `json:"rows"`
				} `json:"children"`
			}
			r := delRun(t, dir, 0, "show", job, "--limit", "3")
			if err := json.Unmarshal([]byte(r.stdout), &shown); err != nil {
				t.Fatalf("show --json: %v\n%s", err, r.stdout)
			}
			var names []string
			for _, c := range shown.Children {
				names = append(names, c.Table[strings.LastIndexByte(c.Table, '.')+1:])
				if len(c.Rows) == 0 || !slices.Contains(c.Columns, "orders_id") {
					t.Fatalf("show: child table %s: columns %v, %d rows", c.Table, c.Columns, len(c.Rows))
				}
			}
			if !slices.Equal(names, []string{"order_lines", "order_line_discounts", "order_tags"}) {
				t.Fatalf("show lists the child tables %v", names)
			}
			if out := idemsync(t, dir, nil, "show", job, "--limit", "2"); out.code != 0 || !strings.Contains(out.stdout, "child table ") || !strings.Contains(out.stdout, "order_line_discounts") {
				t.Fatalf("show: exit %d\n%s", out.code, out.stdout)
			}
		})
	}
}

// A fan-out child's own nested arrays: each store's orders (the child
// resource, keyed by store and order) carry their lines into a child
// table keyed by both and the line's id.
func TestChildTablesFanout(t *testing.T) {
	dir := t.TempDir()
	for _, tg := range childTargets(t, dir) {
		t.Run(tg.name, func(t *testing.T) {
			_, storesURL := startAPI(t, fakeapi.Options{Records: 3, Seed: 1})
			api, url, rng, next := childShop(t, 20, 2)
			prefix := ""
			if tg.schema != "" {
				prefix = tg.schema + "."
			}
			job := writeJob(t, dir, tg.name+"-fanout.yaml", fmt.Sprintf(`name: stores
state: %s-fanout.db
defaults:
  retry: {attempts: 3, min_wait: 5ms, max_wait: 50ms}
  target: {url: %q}
resources:
  - name: stores
    source: {url: %q, records: data, timeout: 5s}
    pagination: {style: page, size_param: per_page, size: 10}
    target:
      table: %sstores
      key: [id]
      columns: {id: {path: id, type: integer}}
  - name: orders
    parent: stores
    parent_rows: all
    source: {url: "%s/page?store={parent.id}", records: data, timeout: 5s}
    pagination: {style: page, size_param: per_page, size: 7}
    target:
      table: %sorders
      key: [store_id, id]
      columns:
        store_id: {parent: id}
        id: {path: id, type: integer}
        lines_json: {path: lines, type: json}
      children:
        lines:
          path: lines
          table: order_lines
          key: id
          columns:
            id: {path: id, type: integer}
            sku: sku
`, tg.name, tg.url, storesURL+"/page", prefix, url, prefix))
			check := func(what string) {
				t.Helper()
				got := linesPerOrder(t, tg, "orders_store_id || '|' || orders_id")
				total := 0
				for store := 1; store <= 3; store++ {
					for _, r := range api.Records() {
						if n := got[fmt.Sprintf("%d|%d", store, r.ID)]; n != len(r.Lines) {
							t.Fatalf("%s: store %d order %d: %d lines stored, want %d", what, store, r.ID, n, len(r.Lines))
						}
						total += len(r.Lines)
					}
				}
				if total == 0 {
					t.Fatalf("%s: no lines at all: the test proves nothing", what)
				}
			}
			delRun(t, dir, 0, "run", job)
			check("first run")
			childMutate(rng, api, &next, 10)
			delRun(t, dir, 0, "run", job)
			check("after the arrays changed")
		})
	}
}
