package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Fan-out × child tables × the change feed × replay and verify, combined
// (docs/job-file.md, "Parent → child fan-out" and "Child tables";
// docs/changes.md): stores, each store's items (a child resource), each
// item's parts (a child table) and each part's tags (a nested child table).

type ipPart struct {
	PID  int      `json:"pid"`
	N    int      `json:"n"`
	Tags []string `json:"tags"`
}

type ipItem struct {
	ID    int      `json:"id"`
	SKU   string   `json:"sku"`
	Parts []ipPart `json:"parts"`
}

type ipShop struct {
	mu     sync.Mutex
	stores map[int]string
	items  map[int][]ipItem
}

func (s *ipShop) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	if page < 1 {
		page = 1
	}
	size, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
	var data []any
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(parts) == 1 && parts[0] == "stores":
		var ids []int
		for id := range s.stores {
			ids = append(ids, id)
		}
		sort.Ints(ids)
		for _, id := range ids {
			data = append(data, map[string]any{"id": id, "name": s.stores[id]})
		}
	case len(parts) == 3 && parts[0] == "stores" && parts[2] == "items":
		id, _ := strconv.Atoi(parts[1])
		if _, ok := s.stores[id]; !ok {
			http.NotFound(w, r)
			return
		}
		for _, it := range s.items[id] {
			data = append(data, it)
		}
	default:
		http.NotFound(w, r)
		return
	}
	lo, hi := min((page-1)*size, len(data)), min(page*size, len(data))
	out := data[lo:hi]
	if out == nil {
		out = []any{}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"data": out, "total": len(data)})
}

type ipTarget struct {
	name, url, schema string
	db                *sql.DB
}

func (tg ipTarget) tbl(n string) string {
	if tg.schema == "" {
		return `"` + n + `"`
	}
	return `"` + tg.schema + `"."` + n + `"`
}

func ipTargets(t *testing.T, dir string) []ipTarget {
	db, err := sql.Open("sqlite", filepath.Join(dir, "out.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	out := []ipTarget{{name: "sqlite", url: "sqlite:out.db", db: db}}
	if u := os.Getenv("IDEMSYNC_TEST_POSTGRES_URL"); u != "" {
		schema := fmt.Sprintf("interplay_%d", time.Now().UnixNano()%1e9)
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
			t.Fatal(err)
		}
		conn.Close(ctx)
		t.Cleanup(func() {
			c, err := pgx.Connect(context.Background(), u)
			if err == nil {
				_, _ = c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
				c.Close(context.Background())
			}
		})
		pdb, err := sql.Open("pgx", u)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pdb.Close() })
		out = append(out, ipTarget{name: "postgres", url: u, schema: schema, db: pdb})
	}
	return out
}

func ipJob(srv string, tg ipTarget, deletes, parentRows, extra string) string {
	p := ""
	if tg.schema != "" {
		p = tg.schema + "."
	}
	return fmt.Sprintf(`name: ip%s
state: state-%s.db
defaults:
  retry: {attempts: 3, min_wait: 5ms, max_wait: 50ms}
  target: {url: %q, changes: true}
resources:
  - name: stores
    source: {url: "%s/stores", records: data, timeout: 5s}
    pagination: {style: page, size_param: per_page, size: 4, total: total}
    target:
      table: %sstores
      key: [id]
      deletes: %s
      columns: {id: {path: id, type: integer}, name: name}
  - name: items
    parent: stores
    parent_rows: %s
    source: {url: "%s/stores/{parent.id}/items", records: data, timeout: 5s}
    pagination: {style: page, size_param: per_page, size: 3, total: total}
    target:
      table: %sitems
      key: [store_id, id]
      deletes: %s
      columns: {store_id: {parent: id}, id: {path: id, type: integer}, sku: sku}
      children:
        parts:
          path: parts
          table: item_parts
          key: pid
          columns: {pid: {path: pid, type: integer}, n: {path: n, type: integer}}
          children:
            tags:
              path: tags
              table: item_part_tags
              columns: {tag: "@this"}
%s`, tg.name, tg.name, tg.url, srv, p, deletes, parentRows, srv, p, deletes, extra)
}

func newIPShop(nStores, nItems int) *ipShop {
	s := &ipShop{stores: map[int]string{}, items: map[int][]ipItem{}}
	for st := 1; st <= nStores; st++ {
		s.stores[st] = fmt.Sprintf("store-%d", st)
		for i := 1; i <= nItems; i++ {
			it := ipItem{ID: i, SKU: fmt.Sprintf("sku-%d-%d", st, i)}
			for p := 1; p <= (st+i)%3+1; p++ {
				it.Parts = append(it.Parts, ipPart{PID: p, N: st * i * p, Tags: []string{fmt.Sprint("t", p), fmt.Sprint("u", i)}})
			}
			s.items[st] = append(s.items[st], it)
		}
	}
	return s
}

// ipWant is every live row the tables must hold, as text lines.
func (s *ipShop) want() map[string][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := map[string][]string{"stores": {}, "items": {}, "item_parts": {}, "item_part_tags": {}}
	for st, name := range s.stores {
		w["stores"] = append(w["stores"], fmt.Sprintf("%d|%s", st, name))
		for _, it := range s.items[st] {
			w["items"] = append(w["items"], fmt.Sprintf("%d|%d|%s", st, it.ID, it.SKU))
			for _, p := range it.Parts {
				w["item_parts"] = append(w["item_parts"], fmt.Sprintf("%d|%d|%d|%d", st, it.ID, p.PID, p.N))
				for pos, tag := range p.Tags {
					w["item_part_tags"] = append(w["item_part_tags"], fmt.Sprintf("%d|%d|%d|%d|%s", st, it.ID, p.PID, pos, tag))
				}
			}
		}
	}
	for k := range w {
		sort.Strings(w[k])
	}
	return w
}

var ipQueries = map[string]string{
	"stores":         `SELECT id || '|' || name FROM %s WHERE %s`,
	"items":          `SELECT store_id || '|' || id || '|' || sku FROM %s WHERE %s`,
	"item_parts":     `SELECT items_store_id || '|' || items_id || '|' || pid || '|' || n FROM %s WHERE %s`,
	"item_part_tags": `SELECT items_store_id || '|' || items_id || '|' || item_parts_pid || '|' || _idemsync_pos || '|' || tag FROM %s WHERE %s`,
}

func ipCheck(t *testing.T, tg ipTarget, s *ipShop, soft bool, what string) {
	t.Helper()
	want := s.want()
	for tbl, q := range ipQueries {
		live := "true"
		if soft {
			live = "_idemsync_deleted_at IS NULL"
		}
		rows, err := tg.db.Query(fmt.Sprintf(q, tg.tbl(tbl), live))
		if err != nil {
			t.Fatalf("%s: %s: %v", what, tbl, err)
		}
		got := []string{}
		for rows.Next() {
			var v string
			if err := rows.Scan(&v); err != nil {
				t.Fatal(err)
			}
			got = append(got, v)
		}
		rows.Close()
		sort.Strings(got)
		if strings.Join(got, "\n") != strings.Join(want[tbl], "\n") {
			t.Fatalf("%s: table %s:\n got %q\nwant %q", what, tbl, got, want[tbl])
		}
	}
}

type ipEvent struct {
	seq           int64
	resource, key string
	op, hash      string
}

func ipEvents(t *testing.T, tg ipTarget, after int64) []ipEvent {
	t.Helper()
	rows, err := tg.db.Query(fmt.Sprintf(`SELECT seq, resource, key, op, coalesce(hash, '') FROM %s WHERE seq > %d ORDER BY seq`, tg.tbl("idemsync_changes"), after))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []ipEvent
	for rows.Next() {
		var e ipEvent
		if err := rows.Scan(&e.seq, &e.resource, &e.key, &e.op, &e.hash); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

func ipLast(evs []ipEvent) int64 {
	if len(evs) == 0 {
		return 0
	}
	return evs[len(evs)-1].seq
}

// ipFeedAgrees: each live row's last event is I/U with its stored hash; no
// key without a live row has a last event other than D.
func ipFeedAgrees(t *testing.T, tg ipTarget, soft bool, what string) {
	t.Helper()
	last := map[string]ipEvent{}
	for _, e := range ipEvents(t, tg, 0) {
		last[e.resource+" "+e.key] = e
	}
	live := "true"
	if soft {
		live = "_idemsync_deleted_at IS NULL"
	}
	stored := map[string]string{}
	for res, q := range map[string]string{
		"stores": `SELECT CAST(id AS text), _idemsync_hash FROM %s WHERE %s`,
		"items":  `SELECT '[' || store_id || ',' || id || ']', _idemsync_hash FROM %s WHERE %s`,
	} {
		rows, err := tg.db.Query(fmt.Sprintf(q, tg.tbl(res), live))
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var k, h string
			if err := rows.Scan(&k, &h); err != nil {
				t.Fatal(err)
			}
			stored[res+" "+k] = h
		}
		rows.Close()
	}
	for k, h := range stored {
		e, ok := last[k]
		if !ok || e.op == "D" || e.hash != h {
			t.Fatalf("%s: live row %s (hash %s): last event %+v", what, k, h, e)
		}
	}
	for k, e := range last {
		if _, ok := stored[k]; !ok && e.op != "D" {
			t.Fatalf("%s: no live row %s, last event %+v", what, k, e)
		}
	}
}

// ipCount counts events by "resource op key".
func ipCount(evs []ipEvent) map[string]int {
	m := map[string]int{}
	for _, e := range evs {
		m[e.resource+" "+e.op+" "+e.key]++
	}
	return m
}

// A child resource with parent_rows: changed walks only the parents
// written since its last run, so run --verify checks only their children;
// run --verify --full walks every parent and repairs the child resource's
// rows and their child tables edited by hand, recording one U for the row
// it rewrote and none for the child rows (docs/guarantees.md, "run
// --verify").
func TestInterplayVerifyChangedChild(t *testing.T) {
	dir := t.TempDir()
	for _, tg := range ipTargets(t, dir) {
		t.Run(tg.name, func(t *testing.T) {
			shop := newIPShop(3, 3)
			srv := httptest.NewServer(shop)
			defer srv.Close()
			job := writeJob(t, dir, tg.name+".yaml", ipJob(srv.URL, tg, "hard", "changed", ""))
			delRun(t, dir, 0, "run", job)
			ipCheck(t, tg, shop, false, "first run")
			for _, q := range []string{
				`UPDATE ` + tg.tbl("items") + ` SET sku = 'hand' WHERE store_id = 2 AND id = 1`,
				`UPDATE ` + tg.tbl("item_parts") + ` SET n = -5 WHERE items_store_id = 3`,
				`DELETE FROM ` + tg.tbl("item_part_tags") + ` WHERE items_store_id = 1`,
			} {
				if _, err := tg.db.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
			seq := ipLast(ipEvents(t, tg, 0)) // on PostgreSQL, with the edit's own U
			delRun(t, dir, 0, "run", job, "--verify", "--full")
			ipCheck(t, tg, shop, false, "run --verify --full")
			ipFeedAgrees(t, tg, false, "run --verify --full")
			evs := ipEvents(t, tg, seq)
			if c := ipCount(evs); len(evs) != 1 || c["items U [2,1]"] != 1 {
				t.Fatalf("run --verify --full recorded %v, want one U of items [2,1]", c)
			}
		})
	}
}
