package e2e

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// The styles of issue 3 — offset, link (absolute and relative next URLs in
// a header holding first/prev/next/last), cursor in a response header, page
// with total_pages, and continue: true — each make the table equal to the
// source in exactly one request per page, and a second run changes nothing.
func TestMoreStylesCleanRun(t *testing.T) {
	const records = 260 // 10 full pages of 25 and a short 11th
	tests := []struct {
		style string
		path  string
		// pages of a full pass: each style ends on the short 11th page
		// (offset, page: short page; link, cursor: no next; page-total:
		// page 11 of total_pages 11).
		requests int
		// probes: requests past the last page. A short page with no count
		// signal is only the end once the next position is seen empty
		// (docs/pagination.md), so offset and page without total_pages ask for
		// a 12th.
		probes int
	}{
		{"offset", "/offset", 11, 1},
		{"link", "/link", 11, 0},
		{"link-relative", "/link", 11, 0},
		{"cursor-header", "/cursor-header", 11, 0},
		{"page-total", "/page", 11, 0},
		{"continue", "/cursor", 11, 0},
		{"page-continue", "/page", 11, 1},
	}
	for _, tt := range tests {
		t.Run(tt.style, func(t *testing.T) {
			t.Parallel()
			api, url := startAPI(t, fakeapi.Options{Records: records, Seed: 3})
			dir := t.TempDir()
			db := filepath.Join(dir, "out.db")
			job := writeJob(t, dir, "job.yaml", styleJob(tt.style, url, "sqlite:out.db"))

			first := runCode(t, dir, nil, 0, "run", job)
			if first.Status != "completed" || first.Inserted != records || first.Records != records || first.Pages != int64(tt.requests) {
				t.Errorf("first run: %+v", first)
			}
			if got := api.Requests(tt.path); got != tt.requests+tt.probes {
				t.Errorf("first run sent %d requests to %s, want %d", got, tt.path, tt.requests+tt.probes)
			}
			assertEqualSource(t, readSQLite(t, db), sourceRows(api))

			api.ResetCounters()
			second := runCode(t, dir, nil, 0, "run", job)
			continues := strings.Contains(tt.style, "continue")
			wantReq, wantRecords := tt.requests+tt.probes, int64(records)
			if continues { // re-reads only the last committed page
				wantReq, wantRecords = 1+tt.probes, 10
			}
			if second.Status != "completed" || second.Records != wantRecords || second.Unchanged != wantRecords || second.Inserted+second.Updated != 0 {
				t.Errorf("second run: %+v, want %d records all unchanged", second, wantRecords)
			}
			if got := api.Requests(tt.path); got != wantReq {
				t.Errorf("second run sent %d requests, want %d", got, wantReq)
			}

			// New records at the end of the order: a continuing feed reads
			// only from its last page on.
			api.ResetCounters()
			api.Add(30)
			third := runCode(t, dir, nil, 0, "run", job)
			if third.Inserted != 30 || third.Updated != 0 {
				t.Errorf("after adding 30 records: %+v", third)
			}
			if continues {
				if got := api.Requests(tt.path); got != 2+tt.probes {
					t.Errorf("continuing feed sent %d requests after 30 new records, want %d (last page again, then the new one)", got, 2+tt.probes)
				}
			}
			assertEqualSource(t, readSQLite(t, db), sourceRows(api))
		})
	}
}

// SIGKILL at random moments (10 per style), then run to exit 0: the table
// equals the source exactly, and the request count proves each run
// continued where the killed one stopped rather than starting over.
func TestMoreStylesCrashConvergence(t *testing.T) {
	const records, pageSize, kills = 1500, 25, 10
	tests := []struct {
		style   string
		workers int // source.concurrency
	}{
		{"offset", 1},
		{"offset", 4},
		{"link", 1},
		{"link-relative", 1},
		{"cursor-header", 1},
		{"page-total", 1},
		{"page-total", 3},
		{"continue", 1},
	}
	for i, tt := range tests {
		name := tt.style
		if tt.workers > 1 {
			name = fmt.Sprintf("%s-concurrency-%d", tt.style, tt.workers)
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			api, url := startAPI(t, fakeapi.Options{Records: records, Latency: 2 * time.Millisecond, Seed: int64(i)})
			dir := t.TempDir()
			spec := styleJob(tt.style, url, "sqlite:out.db")
			if tt.workers > 1 {
				spec = strings.Replace(spec, "  timeout: 5s\n", fmt.Sprintf("  timeout: 5s\n  concurrency: %d\n", tt.workers), 1)
			}
			if tt.style == "continue" {
				// An append-only feed that grows while it is synced.
				api.MutateEvery(7, func(a *fakeapi.API) { a.Add(1) })
			}
			job := writeJob(t, dir, "job.yaml", spec)
			seed := uint64(time.Now().UnixNano())
			st := crashLoop(t, dir, job, kills, seed, 15*time.Millisecond, 90*time.Millisecond)
			if tt.style == "continue" {
				api.MutateEvery(0, nil)
				runCode(t, dir, nil, 0, "run", job) // picks up what the last page's hook added
			}
			assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))

			// A kill wastes at most the page being committed and the pages
			// fetched ahead of it: one for a sequential walk; with workers,
			// one per worker in flight plus the finished page handed over
			// and waiting for the commit (sync/pipeline.go concurrent).
			waste := tt.workers + 1
			if tt.workers > 1 {
				waste++
			}
			// A completed pass requests every page and the empty one after
			// the last; with workers, up to workers-1 more pages past the end
			// were already in flight when the end was proven.
			fullPass := len(api.Records())/pageSize + 1 + tt.workers - 1
			completed := completedRuns(t, dir, job)
			bound := completed*fullPass + waste*(st.kills+1)
			got := api.TotalRequests()
			t.Logf("%s (seed %d): %d kills, %d completed before their kill, %d final run(s), %d requests (bound %d)",
				name, seed, st.kills, st.completions, st.finalRuns, got, bound)
			if got > bound {
				t.Errorf("%d page requests, more than %d: a resumed run started over", got, bound)
			}
		})
	}
}

// Link headers as real APIs write them: several Link header fields, rel
// unquoted, uppercase or a list, commas inside quoted parameters, and next
// URLs that are absolute, absolute-path or query-only references.
func TestLinkHeaderVariants(t *testing.T) {
	var base string
	links := map[string][]string{
		"1": {`<BASE/items?p=1>; rel="first"`, `</items?p=2>; rel=next`},
		"2": {`<BASE/items?p=1>; rel="first", <?p=3>; title="a, b"; rel="next last"`},
		"3": {`<BASE/items?p=4>; REL=NEXT`},
		"4": {`<BASE/items?p=1>; rel="first", <BASE/items?p=3>; rel=prev`},
	}
	var requests atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		p := r.URL.Query().Get("p")
		if p == "" {
			p = "1"
		}
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 4 || r.URL.Path != "/items" {
			http.Error(w, "no such page", http.StatusNotFound)
			return
		}
		for _, l := range links[p] {
			w.Header().Add("Link", strings.ReplaceAll(l, "BASE", base))
		}
		var recs []string
		for id := 3*n - 2; id <= 3*n; id++ {
			recs = append(recs, fmt.Sprintf(`{"id":%d,"name":"n%d"}`, id, id))
		}
		fmt.Fprintf(w, "[%s]", strings.Join(recs, ","))
	})
	base = serve(t, h)
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", fmt.Sprintf(`name: links
source:
  url: %s/items
pagination:
  style: link
target:
  url: sqlite:out.db
  table: orders
  key: [id]
  columns:
    id: {path: id, type: integer}
    name: name
`, base))
	r := runCode(t, dir, nil, 0, "run", job)
	if r.Status != "completed" || r.Pages != 4 || r.Inserted != 12 || requests.Load() != 4 {
		t.Errorf("run: %+v after %d requests, want 4 pages and 12 rows", r, requests.Load())
	}
	if got := countRows(t, filepath.Join(dir, "out.db"), "orders"); got != 12 {
		t.Errorf("%d rows, want 12", got)
	}
}

// When the records fill the last page exactly, page numbers alone need an
// empty page to see the end; total_pages and has_more end on the last full
// page.
func TestPageStyleEnds(t *testing.T) {
	for _, tt := range []struct {
		style    string
		requests int
	}{
		{"page", 11},
		{"page-total", 10},
		{"page-has-more", 10},
		{"offset", 11},
	} {
		t.Run(tt.style, func(t *testing.T) {
			t.Parallel()
			api, url := startAPI(t, fakeapi.Options{Records: 250})
			dir := t.TempDir()
			job := writeJob(t, dir, "job.yaml", styleJob(tt.style, url, "sqlite:out.db"))
			r := runCode(t, dir, nil, 0, "run", job)
			if r.Status != "completed" || r.Inserted != 250 || api.TotalRequests() != tt.requests {
				t.Errorf("run: %+v after %d requests, want %d", r, api.TotalRequests(), tt.requests)
			}
			assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))
		})
	}
}
