package e2e

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// ftMaintenancePage is what a load balancer answers during maintenance.
const ftMaintenancePage = `<!DOCTYPE html><html><head><title>Maintenance</title></head><body><h1>Down for maintenance</h1></body></html>`

// deep returns a page whose one record nests n arrays.
func ftDeep(n int) string {
	return `{"data":[{"id":1,"deep":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}]}`
}

// Hostile answers on page 3 of a run that committed pages 1 and 2: each fails
// with a clear error and the exit code docs/operations.md gives it, writes
// nothing, leaves the checkpoint at page 3 (status shows it, with the error),
// and the next run continues from page 3 once the API is sane.
func TestHostileInput(t *testing.T) {
	const attempts = 6 // styleJob's retry.attempts
	tests := []struct {
		name     string
		job      func(string) string // edits styleJob's page job
		respond  func(w http.ResponseWriter)
		code     int
		requests int // requests for page 3 in the failing run
		says     []string
	}{
		{"body over max_body", ftWithSource("  max_body: 64KiB\n"),
			ftReply(200, "application/json", `{"data":[{"id":1,"pad":"`+strings.Repeat("x", 200<<10)+`"}]}`),
			1, 1, []string{"response body larger than source.max_body (65536 bytes)"}},
		{"html maintenance page 503", nil, ftReply(503, "text/html; charset=utf-8", ftMaintenancePage),
			3, attempts, []string{"HTTP 503 Service Unavailable", "Content-Type text/html", "Down for maintenance", "after 6 attempt(s)"}},
		{"html maintenance page 200", nil, ftReply(200, "text/html", ftMaintenancePage),
			1, 1, []string{"HTTP 200 body is not JSON (Content-Type text/html)", "Down for maintenance"}},
		{"non-JSON body", nil, ftReply(200, "application/json", "this is not JSON"),
			1, 1, []string{"HTTP 200 body is not JSON (Content-Type application/json)"}},
		{"invalid JSON body", nil, ftReply(200, "application/json", `{"data":[{"id":1}],,}`),
			3, attempts, []string{"invalid JSON body (Content-Type application/json)"}},
		{"truncated JSON", nil, ftReply(200, "application/json", `{"data":[{"id":1},{"id":`),
			3, attempts, []string{"invalid JSON body"}},
		{"JSON nested 100k levels", nil, ftReply(200, "application/json", ftDeep(100_000)),
			1, 1, []string{"response JSON is nested deeper than 10000 levels"}},
		{"JSON nested 10M levels", nil, ftReply(200, "application/json", ftDeep(10_000_000)),
			1, 1, []string{"response JSON is nested deeper than 10000 levels"}},
		{"records path is an object", nil, ftReply(200, "application/json", `{"data":{"id":1,"name":"x"}}`),
			1, 1, []string{"records path data is an object, not an array of records"}},
		{"records path missing", nil, ftReply(200, "application/json", `{"items":[{"id":1}],"meta":{}}`),
			1, 1, []string{"records path data not found", "top-level keys: items, meta"}},
		{"error payload with 200", ftWithSource("  error_path: error\n"), ftReply(200, "application/json", `{"error":{"message":"backend unavailable"}}`),
			3, attempts, []string{"error payload at error", "backend unavailable"}},
		{"problem+json with 200", nil, ftReply(200, "application/problem+json", `{"data":[],"type":"about:blank","title":"Service Unavailable","status":503}`),
			3, attempts, []string{"Content-Type application/problem+json", "Service Unavailable", "after 6 attempt(s)"}},
		{"empty page while has_more", ftWithPagination("  has_more: meta.has_more\n"),
			ftReply(200, "application/json", `{"data":[],"meta":{"has_more":true}}`),
			3, attempts, []string{"page 3 is empty but meta.has_more is true", "after 6 attempt(s)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			front := ftStartFront(t, fakeapi.Options{Records: 210, Seed: 3})
			dir := t.TempDir()
			spec := styleJob("page", front.URL, "sqlite:out.db")
			if tt.job != nil {
				spec = tt.job(spec)
			}
			job := writeJob(t, dir, "job.yaml", spec)
			if r := idemsync(t, dir, nil, "run", job, "--max-pages", "2"); r.code != 0 {
				t.Fatalf("first two pages: exit %d: %s", r.code, r.stderr)
			}
			before := ftStatus(t, dir, job)
			if before.Checkpoint != "page 3" {
				t.Fatalf("checkpoint after two pages: %+v", before)
			}
			front.count(true)

			front.arm(ftOnPage("3", tt.respond))
			r := idemsync(t, dir, nil, "run", job)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\nstderr: %s", r.code, tt.code, r.stderr)
			}
			for _, w := range tt.says {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, r.stderr)
				}
			}
			for _, line := range strings.Split(r.stderr, "\n") {
				if strings.HasPrefix(line, "error: ") {
					t.Logf("exit %d: %.300s", r.code, line)
				}
			}
			if n := front.count(false, "page=3"); n != tt.requests {
				t.Errorf("%d requests for page 3, want %d", n, tt.requests)
			}
			if rows, _ := ftTableStats(t, filepath.Join(dir, "out.db"), "orders"); rows != 50 {
				t.Errorf("%d rows in the target after the failure, want the 50 of pages 1 and 2", rows)
			}
			after := ftStatus(t, dir, job)
			if after.Checkpoint != "page 3" || after.Status != "failed" || after.LastRun == nil || !strings.Contains(after.LastRun.Error, tt.says[0]) {
				t.Errorf("status after the failure: %+v (last run %+v), want failed at page 3 with the error", after, after.LastRun)
			}

			front.arm(nil)
			front.count(true)
			r = idemsync(t, dir, nil, "run", job, "--json")
			if r.code != 0 {
				t.Fatalf("after the API recovered: exit %d: %s", r.code, r.stderr)
			}
			if out := parseRun(t, r); out.RunID != before.LastRun.RunID {
				t.Errorf("run %d started over instead of continuing run %d", out.RunID, before.LastRun.RunID)
			}
			// Page 9 is short: page 10, empty, proves it the end
			// (docs/pagination.md), unless has_more (false on page 9) already
			// does.
			want := 8
			if strings.Contains(spec, "has_more") {
				want = 7
			}
			if n := front.count(false, "/page?"); n != want {
				t.Errorf("%d requests to finish, want %d (pages 3 to 9, and 10 to prove 9 the last): a resumed run started over", n, want)
			}
			assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(front.api))
		})
	}
}

// ftWithSource adds lines to the source section of a styleJob spec.
func ftWithSource(lines string) func(string) string {
	return func(spec string) string { return strings.Replace(spec, "  timeout: 5s\n", "  timeout: 5s\n"+lines, 1) }
}

// ftWithPagination adds lines to the pagination section of a styleJob spec.
func ftWithPagination(lines string) func(string) string {
	return func(spec string) string { return strings.Replace(spec, "pagination:\n", "pagination:\n"+lines, 1) }
}

// A large body within max_body (about 20 MB, 20000 records) is a page like
// any other: no crash, every record lands.
func TestHugePage(t *testing.T) {
	const n = 20000
	pad := strings.Repeat("y", 1000)
	var b strings.Builder
	b.WriteString("[")
	for i := 1; i <= n; i++ {
		if i > 1 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"%s %d"}`, i, pad, i)
	}
	b.WriteString("]")
	body := b.String()
	front := ftStartFront(t, fakeapi.Options{Records: 1})
	front.arm(func(w http.ResponseWriter, r *http.Request) bool {
		ftReply(200, "application/json", body)(w)
		return true
	})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", fmt.Sprintf(`name: huge
source:
  url: %s/all
target:
  url: sqlite:out.db
  table: items
  key: [id]
`, front.URL))
	r := idemsync(t, dir, nil, "run", job, "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if out := parseRun(t, r); out.Inserted != n {
		t.Errorf("%d inserted, want %d", out.Inserted, n)
	}
	rows, dups := ftTableStats(t, filepath.Join(dir, "out.db"), "items")
	if rows != n || dups != 0 {
		t.Errorf("%d rows, %d duplicate keys; want %d and 0", rows, dups, n)
	}
	t.Logf("a %d MB page of %d records: exit 0, %d rows", len(body)>>20, n, rows)
}
