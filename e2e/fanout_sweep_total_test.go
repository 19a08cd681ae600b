package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	gosync "sync"
	"testing"
	"time"
)

// shiftShop is a two-level API over page walks with a total: /orders
// lists the parents, /orders/{id}/items?page=N&per_page=M the children of
// one, each page with "total". shift, when set, removes the first child
// of parent 1 right after its first page is served: the children after
// it move back by one, and the one pushed across the page already read is
// listed by no page of that walk, while the total goes down. Parent 1's
// second page is slow and parent 2's first page less so, so that with
// fanout_concurrency 2 a page of parent 2 is committed between parent 1's
// two pages.
type shiftShop struct {
	mu    gosync.Mutex
	items map[int][]int // parent id → child ids, in list order
	shift bool
	// omit, when set, is a child of parent 1 that its first page leaves
	// out silently, once: the page is filled from the next ones, so the
	// next page repeats a child and the walk's count reaches the total
	// with omit never served.
	omit int
}

func (s *shiftShop) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	size, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
	if page < 1 {
		page = 1
	}
	if size < 1 {
		size = 10
	}
	var parent int
	switch {
	case r.URL.Path == "/orders":
	case strings.HasPrefix(r.URL.Path, "/orders/") && strings.HasSuffix(r.URL.Path, "/items"):
		parent, _ = strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/orders/"), "/items"))
	default:
		http.NotFound(w, r)
		return
	}
	switch {
	case parent == 1 && page == 2:
		time.Sleep(400 * time.Millisecond)
	case parent == 2 && page == 1:
		time.Sleep(150 * time.Millisecond)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []int
	if parent == 0 {
		for id := range s.items {
			ids = append(ids, id)
		}
		slices.Sort(ids)
	} else {
		ids = s.items[parent]
	}
	if parent == 1 && page == 1 && s.omit != 0 {
		ids = slices.DeleteFunc(slices.Clone(ids), func(id int) bool { return id == s.omit })
		s.omit = 0
	}
	data := []map[string]int{}
	for i := (page - 1) * size; i < page*size && i < len(ids); i++ {
		data = append(data, map[string]int{"id": ids[i]})
	}
	body, _ := json.Marshal(map[string]any{"data": data, "total": len(s.items[parent])})
	if parent == 0 {
		body, _ = json.Marshal(map[string]any{"data": data, "total": len(ids)})
	}
	if parent == 1 && page == 1 && s.shift {
		s.items[1] = slices.Clone(s.items[1][1:])
		s.shift = false
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(body)
}

// shiftShopJob is a job file over shiftShop: orders, then its child items
// with fanout_concurrency fanout and target.deletes deletes.
func shiftShopJob(url string, fanout int, deletes string) string {
	return fmt.Sprintf(`name: shop
defaults:
  source: {base_url: %q, records: data, timeout: 5s}
  target: {url: "sqlite:out.db"}
resources:
  - name: orders
    source: {path: /orders}
    pagination: {style: page, size_param: per_page, size: 10, total: total}
    target: {table: orders, key: [id], columns: {id: {path: id, type: integer}}}
  - name: items
    parent: orders
    parent_rows: all
    fanout_concurrency: %d
    source: {path: "/orders/{parent.id}/items"}
    pagination: {style: page, size_param: per_page, size: 2, total: total}
    target:
      table: items
      key: [order_id, id]
      deletes: %s
      columns: {order_id: {parent: id}, id: {path: id, type: integer}}
`, url, fanout, deletes)
}

// childrenLive fails unless every child the API lists is a row of items.
func (s *shiftShop) childrenLive(t *testing.T, dir, what string) {
	t.Helper()
	db := openSQLite(t, filepath.Join(dir, "out.db"))
	rows := map[string]bool{}
	q, err := db.Query(`SELECT order_id, id FROM items`)
	if err != nil {
		t.Fatal(err)
	}
	for q.Next() {
		var p, c int
		if err := q.Scan(&p, &c); err != nil {
			t.Fatal(err)
		}
		rows[fmt.Sprintf("%d|%d", p, c)] = true
	}
	q.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	for p, ids := range s.items {
		for _, c := range ids {
			if !rows[fmt.Sprintf("%d|%d", p, c)] {
				t.Fatalf("%s: child %d of parent %d is listed by the API and has no row (rows: %v)", what, c, p, rows)
			}
		}
	}
}

// A child resource walked with fanout_concurrency > 1 commits the pages of
// its parents interleaved. A page walk's total that goes down between two
// pages of one parent's walk voids the pass's proof (docs/deletions.md,
// "What proves absence") also when another parent's page was committed
// between them: otherwise two such passes in a row remove a live child.
func TestFanoutSweepTotalDownInterleaved(t *testing.T) {
	for _, fanout := range []int{1, 2} {
		t.Run(fmt.Sprintf("fanout%d", fanout), func(t *testing.T) {
			dir := t.TempDir()
			api := &shiftShop{items: map[int][]int{1: {11, 12, 13, 14, 15}, 2: {21}}}
			job := writeJob(t, dir, "job.yaml", shiftShopJob(serve(t, api), fanout, "hard"))
			runJob(t, dir, 0, "run", job)
			api.childrenLive(t, dir, "the first pass")
			for pass := 1; pass <= 2; pass++ {
				api.mu.Lock()
				if pass == 2 { // a child added before the walk's position, removed during it
					api.items[1] = append([]int{10}, api.items[1]...)
				}
				api.shift = true
				api.mu.Unlock()
				r := idemsync(t, dir, nil, "run", job, "--json")
				api.childrenLive(t, dir, fmt.Sprintf("shifted pass %d (exit %d)", pass, r.code))
				if r.code != 0 {
					t.Fatalf("shifted pass %d: exit %d\n%s\n%s", pass, r.code, r.stdout, r.stderr)
				}
				if res := parseJobRun(t, r).resource(t, "items"); res.Deleted != 0 {
					t.Fatalf("shifted pass %d deleted %d child rows", pass, res.Deleted)
				}
				if !strings.Contains(r.stdout, "went down from 5 to 4") {
					t.Fatalf("shifted pass %d: the sweep is not skipped for the total that went down:\n%s\n%s", pass, r.stdout, r.stderr)
				}
			}
		})
	}
}

// Each parent's walk of a child resource must reach pagination.total in
// distinct keys (docs/pagination.md, "Counts compare distinct keys";
// docs/job-file.md: end proofs apply per parent), whether or not its last
// page is the run's last, and whatever pages of other parents were
// committed between its own: a page that silently left a child out fails
// the run (exit 3) instead of completing it with that child missing.
func TestFanoutWalkShortOfTotal(t *testing.T) {
	for _, deletes := range []string{"keep", "hard"} {
		for _, fanout := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/fanout%d", deletes, fanout), func(t *testing.T) {
				dir := t.TempDir()
				api := &shiftShop{items: map[int][]int{1: {11, 12, 13, 14, 15}, 2: {21}}}
				job := writeJob(t, dir, "job.yaml", shiftShopJob(serve(t, api), fanout, deletes))
				api.mu.Lock()
				api.omit = 12
				api.mu.Unlock()
				r := idemsync(t, dir, nil, "run", job, "--json")
				if r.code == 0 {
					api.childrenLive(t, dir, "a walk whose page left a child out, exit 0")
				}
				if r.code != 3 || !strings.Contains(r.stdout, "short of total") {
					t.Fatalf("a walk whose page left a child out: exit %d, want 3 naming the shortfall\n%s\n%s", r.code, r.stdout, r.stderr)
				}
				runJob(t, dir, 0, "run", job)
				api.childrenLive(t, dir, "the next run")
			})
		}
	}
}

// A window of an incremental.step run is a walk of its own
// (docs/pagination.md, "Counts compare distinct keys"): a page of a window
// that is not the run's last that silently left a record out fails the
// run (exit 3) instead of completing it with that record missing.
func TestWindowWalkShortOfTotal(t *testing.T) {
	for _, conc := range []int{1, 2} {
		t.Run(fmt.Sprintf("concurrency%d", conc), func(t *testing.T) {
			base := time.Now().UTC().Truncate(time.Second)
			var mu gosync.Mutex
			omit := 9 // in the older window; its first page leaves it out, once
			url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				q := r.URL.Query()
				since, err1 := time.Parse(time.RFC3339, q.Get("since"))
				until, err2 := time.Parse(time.RFC3339, q.Get("until"))
				if err1 != nil || err2 != nil {
					http.Error(w, `{"error":"since and until are required"}`, http.StatusBadRequest)
					return
				}
				page, _ := strconv.Atoi(q.Get("page"))
				page = max(page, 1)
				var ids []int
				for id := 1; id <= 20; id++ {
					if ts := base.Add(-time.Duration(id) * time.Hour); !ts.Before(since) && ts.Before(until) {
						ids = append(ids, id)
					}
				}
				total := len(ids)
				mu.Lock()
				if page == 1 && slices.Contains(ids, omit) {
					ids = slices.DeleteFunc(ids, func(id int) bool { return id == omit })
					omit = 0
				}
				mu.Unlock()
				data := []map[string]any{}
				for i := (page - 1) * 4; i < page*4 && i < len(ids); i++ {
					data = append(data, map[string]any{"id": ids[i], "updated_at": base.Add(-time.Duration(ids[i]) * time.Hour).Format(time.RFC3339)})
				}
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(map[string]any{"data": data, "total": total})
			}))
			dir := t.TempDir()
			job := writeJob(t, dir, "job.yaml", fmt.Sprintf(`name: windows
source: {url: "%s", records: data}
pagination: {style: page, size_param: per_page, size: 4, total: total}
incremental: {field: updated_at, param: since, end_param: until, step: 1d, concurrency: %d, initial: "%s"}
retry: {attempts: 2, min_wait: 1ms, max_wait: 5ms}
target: {url: "sqlite:out.db", table: items, key: [id], columns: {id: {path: id, type: integer}, updated_at: updated_at}}
`, url, conc, base.Add(-30*time.Hour).Format(time.RFC3339)))
			r := idemsync(t, dir, nil, "run", job, "--json")
			if r.code != 3 || !strings.Contains(r.stdout, "short of total") {
				t.Fatalf("a window whose page left a record out: exit %d, want 3 naming the shortfall\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			runCode(t, dir, nil, 0, "run", job)
			var n int
			if err := openSQLite(t, filepath.Join(dir, "out.db")).QueryRow(`SELECT count(DISTINCT id) FROM items`).Scan(&n); err != nil || n != 20 {
				t.Fatalf("after the next run: %d rows (%v), want 20", n, err)
			}
		})
	}
}
