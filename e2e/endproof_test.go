package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// docs/guarantees.md, "Exit 0 means complete", and docs/pagination.md, "How a
// run knows it reached the end": exit 0 only on positive evidence of the end of
// pagination. Each test below serves an API that answers one page wrongly
// (empty or short while its own metadata says more, capped, filtered, 204,
// HTML) and checks that the run never reports success over a hole.

// epRetry is the retry block of these tests: 4 attempts, fast.
const epRetry = "retry:\n  attempts: 4\n  min_wait: 5ms\n  max_wait: 20ms\n"

// epJob returns a job file: source url, records path ("" for a bare
// array), the pagination block's lines, extra top-level YAML, target out.db.
func epJob(name, url, records, pagination, extra string) string {
	src := "source:\n  url: " + url + "\n  timeout: 5s\n"
	if records != "" {
		src += "  records: " + strconv.Quote(records) + "\n"
	}
	return "name: " + name + "\n" + src + "pagination:\n" + pagination + epRetry + extra +
		"target:\n  url: sqlite:out.db\n  table: orders\n  key: [id]\n" + columnsYAML
}

// epPage is page style against /page in pages of size.
func epPage(size int, more string) string {
	return fmt.Sprintf("  style: page\n  size_param: per_page\n  size: %d\n%s", size, more)
}

// epLie is a lie told on page n of /page (always when times is -1).
func epLie(page, keep, times int) fakeapi.Lie {
	return fakeapi.Lie{Path: "/page", Param: "page", Value: strconv.Itoa(page), Keep: keep, Times: times}
}

// epRun runs job with --json in dir and returns the result and its object.
func epRun(t *testing.T, dir, job string, want int) (result, runJSON) {
	t.Helper()
	r := idemsync(t, dir, nil, "run", job, "--json")
	if r.code != want {
		t.Fatalf("run: exit %d, want %d\nstdout: %s\nstderr: %s", r.code, want, r.stdout, r.stderr)
	}
	return r, parseRun(t, r)
}

// A page that comes back empty or short once, while another signal says
// there is more, is fetched again; the run completes with every row. When
// it stays so, the run exits 3 naming the contradiction, the checkpoint
// stays at that page, and the next run continues from it once the API
// answers it properly.
func TestEndProofContradictedPage(t *testing.T) {
	tests := []struct {
		name   string
		pag    string
		quirks fakeapi.Quirks
		says   string
	}{
		{"empty page, total_pages", epPage(25, "  total_pages: meta.total_pages\n"),
			fakeapi.Quirks{Lies: []fakeapi.Lie{epLie(4, 0, -1)}},
			"page 4 is empty but meta.total_pages says 10 pages"},
		{"short page, has_more", epPage(25, "  has_more: meta.has_more\n"),
			fakeapi.Quirks{Lies: []fakeapi.Lie{epLie(4, 10, -1)}},
			"page 4 is short (10 of 25 records) but meta.has_more is true"},
		{"empty page, has_more", epPage(25, "  has_more: meta.has_more\n"),
			fakeapi.Quirks{Lies: []fakeapi.Lie{epLie(4, 0, -1)}},
			"page 4 is empty but meta.has_more is true"},
		{"empty page, X-Total-Count", epPage(25, "  total: header:X-Total-Count\n"),
			fakeapi.Quirks{TotalHeader: "X-Total-Count", Lies: []fakeapi.Lie{epLie(4, 0, -1)}},
			"page 4 is empty but X-Total-Count says 250 records"},
		{"short page, X-Total-Count", epPage(25, "  total: header:X-Total-Count\n"),
			fakeapi.Quirks{TotalHeader: "X-Total-Count", Lies: []fakeapi.Lie{epLie(4, 10, -1)}},
			"page 4 is short (10 of 25 records) but X-Total-Count says 250 records"},
		{"has_more false on a full page, total_pages", epPage(25, "  has_more: meta.has_more\n  total_pages: meta.total_pages\n"),
			fakeapi.Quirks{Lies: []fakeapi.Lie{{Path: "/page", Param: "page", Value: "4", Keep: 25, Times: -1, HasMore: new(bool)}}},
			"page 4: meta.has_more is false but meta.total_pages says 10 pages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api, url := startAPI(t, fakeapi.Options{Records: 250, Seed: 11})
			dir := t.TempDir()
			job := writeJob(t, dir, "job.yaml", epJob("ep", url+"/page", "data", tt.pag, ""))

			// Told once: fetched again, the run completes with every row.
			once := tt.quirks
			once.Lies = []fakeapi.Lie{once.Lies[0]}
			once.Lies[0].Times = 1
			api.SetQuirks(once)
			r, out := epRun(t, dir, job, 0)
			if out.Status != "completed" || api.LiesTold() != 1 {
				t.Fatalf("%+v after %d lies", out, api.LiesTold())
			}
			if !strings.Contains(r.stderr, "fetching it again") {
				t.Errorf("stderr does not say the page was fetched again:\n%s", r.stderr)
			}
			assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))

			// Told always: exit 3 naming the contradiction, checkpoint intact.
			dir = t.TempDir()
			job = writeJob(t, dir, "job.yaml", epJob("ep", url+"/page", "data", tt.pag, ""))
			api.SetQuirks(tt.quirks)
			api.ResetCounters()
			r, out = epRun(t, dir, job, 3)
			if !strings.Contains(r.stderr, tt.says) || !strings.Contains(out.Error, tt.says) {
				t.Errorf("exit 3 without %q:\nerror: %s\nstderr: %s", tt.says, out.Error, r.stderr)
			}
			if out.Status != "failed" || out.Records != 75 {
				t.Errorf("%+v, want failed after the 75 records of pages 1-3", out)
			}
			if rows, _ := ftTableStats(t, filepath.Join(dir, "out.db"), "orders"); rows != 75 {
				t.Errorf("%d rows, want 75", rows)
			}
			if st := ftStatus(t, dir, job); st.Checkpoint != "page 4" || st.Status != "failed" {
				t.Errorf("status %+v, want failed at page 4", st)
			}
			api.SetQuirks(fakeapi.Quirks{TotalHeader: tt.quirks.TotalHeader})
			_, again := epRun(t, dir, job, 0)
			if again.RunID != out.RunID || again.Status != "completed" {
				t.Errorf("next run %+v, want run %d continued to completion", again, out.RunID)
			}
			assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))
		})
	}
}

// An incremental run that meets a contradicted empty page fails with exit
// 3 and never moves the saved mark: the next run after the API recovers
// still reads the records behind the hole.
func TestEndProofIncrementalMarkStays(t *testing.T) {
	api, url := startAPI(t, fakeapi.Options{Records: 250, Seed: 12})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", epJob("ep", url+"/page", "data",
		epPage(25, "  total_pages: meta.total_pages\n"), incrementalYAML))
	epRun(t, dir, job, 0)
	mark := ftStatus(t, dir, job).HWM
	if mark == "" {
		t.Fatal("no mark after the first run")
	}
	// 100 records change; the next window holds them in 4 pages; page 3
	// comes back empty whatever happens.
	for id := 1; id <= 100; id++ {
		api.Update(id, func(r *fakeapi.Record) { r.Name += " v2" })
	}
	api.SetQuirks(fakeapi.Quirks{Lies: []fakeapi.Lie{epLie(3, 0, -1)}})
	_, out := epRun(t, dir, job, 3)
	if !strings.Contains(out.Error, "page 3 is empty but meta.total_pages says") {
		t.Errorf("error: %s", out.Error)
	}
	if st := ftStatus(t, dir, job); st.HWM != mark {
		t.Fatalf("saved mark moved from %s to %s over a hole (%+v)", mark, st.HWM, out)
	}
	api.SetQuirks(fakeapi.Quirks{})
	epRun(t, dir, job, 0)
	if st := ftStatus(t, dir, job); st.HWM == mark {
		t.Errorf("saved mark did not move once the run completed")
	}
	assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))
}

// An API that silently serves at most 25 records per page while the job
// asks for 100: idemsync notices, says so once, and reads every record.
func TestEndProofPageCap(t *testing.T) {
	tests := []struct {
		name, path, pag string
		records         int
	}{
		{"page with total_pages", "/page", "  style: page\n  size_param: per_page\n  size: 100\n  total_pages: meta.total_pages\n", 100},
		{"page without signals", "/page", "  style: page\n  size_param: per_page\n  size: 100\n", 110},
		{"page concurrency 3", "/page", "  style: page\n  size_param: per_page\n  size: 100\n", 260},
		{"offset", "/offset", "  style: offset\n  size: 100\n", 110},
		{"offset with total", "/offset", "  style: offset\n  size: 100\n  total: total\n", 230},
		{"offset concurrency 4", "/offset", "  style: offset\n  size: 100\n", 260},
		{"hwm", "/hwm", "  style: hwm\n  field: updated_at\n  param: since\n  size_param: limit\n  size: 100\n", 110},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api, url := startAPI(t, fakeapi.Options{Records: tt.records, Seed: 13, Quirks: fakeapi.Quirks{PageCap: 25}})
			dir := t.TempDir()
			extra := ""
			if strings.Contains(tt.name, "concurrency") {
				extra = "  concurrency: " + tt.name[len(tt.name)-1:] + "\n"
			}
			spec := epJob("ep", url+tt.path, "data", tt.pag, "")
			spec = strings.Replace(spec, "  timeout: 5s\n", "  timeout: 5s\n"+extra, 1)
			job := writeJob(t, dir, "job.yaml", spec)
			r, out := epRun(t, dir, job, 0)
			if !strings.Contains(r.stderr, "at most 25 records per page") {
				t.Errorf("no warning naming the cap:\n%s", r.stderr)
			}
			t.Logf("%s: %d records, %d pages, %d requests", tt.name, out.Records, out.Pages, api.TotalRequests())
			assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))
		})
	}
}

// The short-page rule counts the array the API returned, not what a GJSON
// filter in records kept.
func TestEndProofFilteredRecords(t *testing.T) {
	api, url := startAPI(t, fakeapi.Options{Records: 120, Seed: 14})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", epJob("ep", url+"/page", "data.#(active==true)#", epPage(25, ""), ""))
	_, out := epRun(t, dir, job, 0)
	want := map[int]row{}
	for id, r := range sourceRows(api) {
		if r.active {
			want[id] = r
		}
	}
	if out.Status != "completed" || int(out.Records) != len(want) {
		t.Errorf("%+v, want completed with the %d active records", out, len(want))
	}
	assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), want)
}

// records: "#.comments|@flatten" pages by posts: 10 posts a page, one
// comment on every other post. The page holds 5 records but 10 posts, so it
// is not short.
func TestEndProofFlattenedRecords(t *testing.T) {
	const posts = 45
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		var out []map[string]any
		for id := (page-1)*10 + 1; id <= min(page*10, posts); id++ {
			comments := []map[string]any{}
			if id%2 == 0 {
				comments = append(comments, map[string]any{"id": id * 100, "name": fmt.Sprint("c", id)})
			}
			out = append(out, map[string]any{"id": id, "comments": comments})
		}
		if out == nil {
			out = []map[string]any{}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}))
	dir := t.TempDir()
	spec := fmt.Sprintf("name: flat\nsource:\n  url: %s/posts\n  records: \"#.comments|@flatten\"\npagination:\n%s%s"+
		"target:\n  url: sqlite:out.db\n  table: comments\n  key: [id]\n  columns:\n    id: {path: id, type: integer}\n    name: name\n",
		url, epPage(10, ""), epRetry)
	job := writeJob(t, dir, "job.yaml", spec)
	_, out := epRun(t, dir, job, 0)
	if out.Status != "completed" || out.Records != posts/2 {
		t.Errorf("%+v, want completed with %d comments", out, posts/2)
	}
	if rows, _ := ftTableStats(t, filepath.Join(dir, "out.db"), "comments"); rows != posts/2 {
		t.Errorf("%d comments in the target, want %d", rows, posts/2)
	}
}

// hwm needs pagination.size: without it a short page cannot be told.
func TestEndProofHWMNeedsSize(t *testing.T) {
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", epJob("ep", "http://127.0.0.1:1/hwm", "data",
		"  style: hwm\n  field: updated_at\n  param: since\n", ""))
	r := idemsync(t, dir, nil, "validate", job)
	if r.code != 2 || !strings.Contains(r.stderr, "pagination.size") || !strings.Contains(r.stderr, "line ") {
		t.Fatalf("validate: exit %d, want 2 naming pagination.size and its line: %s", r.code, r.stderr)
	}
}

// 204 No Content is an empty page: past the end it ends the run, in the
// middle (total_pages says more) it is a contradiction.
func TestEndProof204(t *testing.T) {
	api, url := startAPI(t, fakeapi.Options{Records: 100, Seed: 15})
	lie := func(page int) fakeapi.Quirks {
		return fakeapi.Quirks{Lies: []fakeapi.Lie{{Path: "/page", Param: "page", Value: strconv.Itoa(page), Times: -1, Status: http.StatusNoContent}}}
	}
	api.SetQuirks(lie(5))
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", epJob("ep", url+"/page", "data", epPage(25, ""), ""))
	if _, out := epRun(t, dir, job, 0); out.Status != "completed" || out.Records != 100 {
		t.Errorf("%+v, want completed with 100 records", out)
	}
	assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))

	// A 204 has no body, so only a header can contradict it.
	q := lie(3)
	q.TotalHeader = "X-Total-Count"
	api.SetQuirks(q)
	dir = t.TempDir()
	job = writeJob(t, dir, "job.yaml", epJob("ep", url+"/page", "data", epPage(25, "  total: header:X-Total-Count\n"), ""))
	if _, out := epRun(t, dir, job, 3); !strings.Contains(out.Error, "page 3 is empty but X-Total-Count says 100 records") {
		t.Errorf("error: %s", out.Error)
	}
}

// A 2xx body that is not JSON at all (a login page) is permanent: exit 1
// after one request. A truncated JSON body is transient: retried.
func TestEndProofNotJSON(t *testing.T) {
	api, url := startAPI(t, fakeapi.Options{Records: 100, Seed: 16})
	api.SetQuirks(fakeapi.Quirks{Lies: []fakeapi.Lie{{Path: "/page", Param: "page", Value: "2", Times: -1,
		Body: "<!DOCTYPE html><html><body><form>Sign in</form></body></html>", ContentType: "text/html; charset=utf-8"}}})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", epJob("ep", url+"/page", "data", epPage(25, ""), ""))
	r, out := epRun(t, dir, job, 1)
	if !strings.Contains(out.Error, "not JSON") || !strings.Contains(out.Error, "Sign in") {
		t.Errorf("error %q does not say the body is not JSON", out.Error)
	}
	if n := api.LiesTold(); n != 1 {
		t.Errorf("page 2 requested %d times, want 1 (not retried)\n%s", n, r.stderr)
	}

	api.SetQuirks(fakeapi.Quirks{})
	api.SetFaults(fakeapi.Faults{Rate: 1, Kinds: []string{fakeapi.FaultTruncated}, Limit: 2})
	dir = t.TempDir()
	job = writeJob(t, dir, "job.yaml", epJob("ep", url+"/page", "data", epPage(25, ""), ""))
	if _, out := epRun(t, dir, job, 0); out.Status != "completed" {
		t.Errorf("%+v", out)
	}
	if n := api.FaultCounts()[fakeapi.FaultTruncated]; n != 2 {
		t.Errorf("%d truncated bodies, want 2 (retried)", n)
	}
	assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(api))
}

// A Link rel="next" header contradicts an empty page in any style.
func TestEndProofLinkHeaderContradicts(t *testing.T) {
	api, url := startAPI(t, fakeapi.Options{Records: 100, Seed: 17})
	api.SetQuirks(fakeapi.Quirks{Lies: []fakeapi.Lie{{Path: "/link", Param: "page", Value: "3", Times: -1}}})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", epJob("ep", url+"/link", "", epPage(25, ""), ""))
	_, out := epRun(t, dir, job, 3)
	if !strings.Contains(out.Error, `page 3 is empty but the response has a Link rel="next" header`) {
		t.Errorf("error: %s", out.Error)
	}
}
