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
	gosync "sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// delRecord is one record of delAPI.
type delRecord struct {
	ID        int    `json:"id"`
	V         string `json:"v"`
	UpdatedAt string `json:"updated_at"`
	Deleted   bool   `json:"deleted,omitempty"`
	Rev       *int   `json:"rev,omitempty"` // absent unless a test sets it
}

// delAPI is a paginated API over a mutable set of records, ordered by
// id: GET /items?page=N&per_page=M, or ?offset=N&limit=M, or (a cursor
// walk) ?per_page=M[&after=ID], each [&updated_since=T][&updated_before=T].
// Its body is {"data": [...], "total": N, "next": ID or null}. Records can
// be removed, restored unchanged, changed, flagged as tombstones; glitch
// makes every page empty (an API that lost its list for a moment).
type delAPI struct {
	URL    string
	mu     gosync.Mutex
	recs   map[int]delRecord
	clock  time.Time
	glitch bool
	fail   int // when > 0, this page answers 500
	null   int // when > 0, this page answers 200 {"data": null, "error": {…}}
	since  []string
	// empty, when > 0, is a page number answered with no records (and
	// the true total): a page lost for a moment in the middle of a walk.
	empty int
	// omit, when > 0, is a record id every page leaves out silently (the
	// total still counts it).
	omit int
	// served, when set, is called under the lock after each page with
	// the index of its first record.
	served func(a *delAPI, start int)
}

// newDelAPI serves n records with ids 1..n.
func newDelAPI(t *testing.T, n int) *delAPI {
	t.Helper()
	a := &delAPI{recs: map[int]delRecord{}, clock: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
	for i := 1; i <= n; i++ {
		a.put(i, fmt.Sprintf("v%d", i), false)
	}
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	a.URL = srv.URL
	return a
}

// put adds or replaces record id with value v, stamped with a new time.
func (a *delAPI) put(id int, v string, deleted bool) {
	a.clock = a.clock.Add(time.Second)
	a.recs[id] = delRecord{ID: id, V: v, UpdatedAt: a.clock.Format(time.RFC3339), Deleted: deleted}
}

// set is put under the lock.
func (a *delAPI) set(id int, v string, deleted bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.put(id, v, deleted)
}

// remove deletes records and returns them, to restore later.
func (a *delAPI) remove(ids ...int) []delRecord {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []delRecord
	for _, id := range ids {
		out = append(out, a.recs[id])
		delete(a.recs, id)
	}
	return out
}

// restore puts removed records back exactly as they were.
func (a *delAPI) restore(recs ...delRecord) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, r := range recs {
		a.recs[r.ID] = r
	}
}

// setGlitch turns the empty-list glitch on or off.
func (a *delAPI) setGlitch(on bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.glitch = on
}

// setFail makes page n answer 500 (0: none).
func (a *delAPI) setFail(n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.fail = n
}

// setNull makes page n answer a null list next to an error object (0: none).
func (a *delAPI) setNull(n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.null = n
}

// live returns the ids of the records not flagged deleted.
func (a *delAPI) live() map[int]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[int]string{}
	for id, r := range a.recs {
		if !r.Deleted {
			out[id] = r.V
		}
	}
	return out
}

func (a *delAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	q := r.URL.Query()
	since, before := q.Get("updated_since"), q.Get("updated_before")
	a.since = append(a.since, since)
	var ids []int
	for id, rec := range a.recs {
		if (since == "" || rec.UpdatedAt >= since) && (before == "" || rec.UpdatedAt < before) {
			ids = append(ids, id)
		}
	}
	sort.Ints(ids)
	page, _ := strconv.Atoi(q.Get("page"))
	size, _ := strconv.Atoi(q.Get("per_page"))
	start := (page - 1) * size
	switch {
	case q.Has("offset"):
		start, _ = strconv.Atoi(q.Get("offset"))
		size, _ = strconv.Atoi(q.Get("limit"))
		page = 1
		if size > 0 {
			page = start/size + 1
		}
	case !q.Has("page"): // a cursor walk: the records after the id given
		after, _ := strconv.Atoi(q.Get("after"))
		start, page = sort.SearchInts(ids, after+1), 1
	}
	if page < 1 || size < 1 || start < 0 {
		http.Error(w, "bad page", http.StatusBadRequest)
		return
	}
	if a.fail == page {
		http.Error(w, "boom", http.StatusInternalServerError)
		return
	}
	if a.null == page {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"data": null, "error": {"code": "internal", "message": "backend unavailable"}}`)
		return
	}
	data := []delRecord{}
	var next any
	if !a.glitch && a.empty != page {
		for i := start; i < len(ids) && i < start+size; i++ {
			if ids[i] != a.omit {
				data = append(data, a.recs[ids[i]])
			}
		}
		if start+size < len(ids) {
			next = ids[start+size-1]
		}
	}
	total := len(ids)
	if a.glitch {
		total = 0
	}
	if a.served != nil {
		a.served(a, start)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"data": data, "total": total, "next": next})
}

// delTarget is a target of the deletion tests: SQLite or PostgreSQL.
type delTarget struct {
	name, url, table string
	// rows returns the table by id: nil for a live row, the mark for a
	// soft-deleted one.
	rows func(t *testing.T) map[int]*string
}

// eachDelTarget runs fn as a subtest for each deletes mode of modes on
// each of delTargets, the targets of a mode in a directory of their own.
func eachDelTarget(t *testing.T, modes []string, fn func(t *testing.T, dir, mode string, tg delTarget)) {
	t.Helper()
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			for _, tg := range delTargets(t, dir) {
				t.Run(tg.name, func(t *testing.T) { fn(t, dir, mode, tg) })
			}
		})
	}
}

// delTargets returns an SQLite target in dir and, when the server is
// configured, a PostgreSQL one.
func delTargets(t *testing.T, dir string) []delTarget {
	out := []delTarget{{name: "sqlite", url: "sqlite:out.db", table: "items", rows: func(t *testing.T) map[int]*string {
		t.Helper()
		path := filepath.Join(dir, "out.db")
		if _, err := os.Stat(path); err != nil {
			return map[int]*string{}
		}
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		return readDelRows(t, func(q string) (delScanner, error) { r, err := db.Query(q); return r, err })
	}}}
	if u := os.Getenv("IDEMSYNC_TEST_POSTGRES_URL"); u != "" {
		schema := freshSchema(t, u)
		out = append(out, delTarget{name: "postgres", url: u, table: schema + ".items", rows: func(t *testing.T) map[int]*string {
			t.Helper()
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, u)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			var exists bool
			if err := conn.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", schema+".items").Scan(&exists); err != nil || !exists {
				return map[int]*string{}
			}
			return readDelRows(t, func(q string) (delScanner, error) {
				r, err := conn.Query(ctx, strings.Replace(q, "FROM items", "FROM "+pgx.Identifier{schema, "items"}.Sanitize(), 1))
				return pgRows{r}, err
			})
		}})
	}
	return out
}

// delScanner is what database/sql's and pgx's rows share.
type delScanner interface {
	Next() bool
	Scan(...any) error
	Close() error
	Err() error
}

type pgRows struct{ pgx.Rows }

func (r pgRows) Close() error { r.Rows.Close(); return nil }

// readDelRows reads id and the deletion mark (when the column exists).
func readDelRows(t *testing.T, query func(string) (delScanner, error)) map[int]*string {
	t.Helper()
	out := map[int]*string{}
	rows, err := query(`SELECT id, _idemsync_deleted_at FROM items`)
	mark := err == nil
	if !mark {
		if rows, err = query(`SELECT id, NULL FROM items`); err != nil {
			t.Fatalf("read target: %v", err)
		}
	}
	defer rows.Close()
	for rows.Next() {
		var id int
		var del sql.NullString
		var delT *time.Time
		var scanErr error
		if _, isPG := rows.(pgRows); isPG && mark {
			scanErr = rows.Scan(&id, &delT)
			if delT != nil {
				del = sql.NullString{String: delT.UTC().Format(time.RFC3339Nano), Valid: true}
			}
		} else {
			scanErr = rows.Scan(&id, &del)
		}
		if scanErr != nil {
			t.Fatal(scanErr)
		}
		if _, dup := out[id]; dup {
			t.Fatalf("duplicate key %d", id)
		}
		if del.Valid {
			s := del.String
			out[id] = &s
		} else {
			out[id] = nil
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// delJob is the job file of the deletion tests; extra is added under
// target (indented by two spaces), top at the end of the file.
func delJob(apiURL string, tg delTarget, deletes, extra, top string) string {
	return fmt.Sprintf(`name: del
source:
  url: %s/items
  records: data
  timeout: 5s
pagination:
  style: page
  size_param: per_page
  size: 10
retry:
  attempts: 2
  min_wait: 10ms
  max_wait: 50ms
target:
  url: %s
  table: %s
  key: [id]
  columns:
    id: {path: id, type: integer}
    v: v
    updated_at: {path: updated_at, type: timestamp}
  deletes: %s
%s%s`, apiURL, tg.url, tg.table, deletes, extra, top)
}

// withTotal adds pagination.total to a delJob, so that a walk whose last
// page is full ends proven (docs/deletions.md, What proves absence).
func withTotal(job string) string {
	return strings.Replace(job, "  size: 10\n", "  size: 10\n  total: total\n", 1)
}

// liveIDs returns the ids of the table's unmarked rows.
func liveIDs(rows map[int]*string) map[int]bool {
	out := map[int]bool{}
	for id, m := range rows {
		if m == nil {
			out[id] = true
		}
	}
	return out
}

// sameIDs fails unless the table's live rows are exactly want's ids.
func sameIDs(t *testing.T, what string, live map[int]bool, want map[int]string) {
	t.Helper()
	var missing, extra []int
	for id := range want {
		if !live[id] {
			missing = append(missing, id)
		}
	}
	for id := range live {
		if _, ok := want[id]; !ok {
			extra = append(extra, id)
		}
	}
	if len(missing)+len(extra) > 0 {
		sort.Ints(missing)
		sort.Ints(extra)
		t.Fatalf("%s: live rows differ from the source: missing %v, extra %v", what, missing, extra)
	}
}

// deletedOf reads the deleted count of a --json run object.
func deletedOf(t *testing.T, r result) int64 {
	t.Helper()
	var v struct {
		Deleted *int64 `json:"deleted"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.Deleted == nil {
		t.Fatalf("no deleted count in %s (%v)", r.stdout, err)
	}
	return *v.Deleted
}
