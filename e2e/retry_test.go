package e2e

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// Retries run out on page 4: exit 3 with the status and the attempt count,
// exactly retry.attempts requests for it, the checkpoint intact at page 4;
// the next run continues that run from page 4. A permanent status exits 1
// after one request, and the run after it continues too.
func TestRetriesExhaustedThenContinue(t *testing.T) {
	tests := []struct {
		status, code, requests int
	}{
		{503, 3, 6},
		{429, 3, 6},
		{401, 1, 1},
		{404, 1, 1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			t.Parallel()
			front := ftStartFront(t, fakeapi.Options{Records: 210, Seed: 5})
			front.arm(ftOnPage("4", ftReply(tt.status, "application/json", `{"error":{"message":"page 4 is unwell"}}`)))
			dir := t.TempDir()
			job := writeJob(t, dir, "job.yaml", styleJob("page", front.URL, "sqlite:out.db"))

			r := idemsync(t, dir, nil, "run", job)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d: %s", r.code, tt.code, r.stderr)
			}
			want := []string{fmt.Sprintf("HTTP %d %s", tt.status, http.StatusText(tt.status)), "page 4 is unwell"}
			if tt.code == 3 {
				want = append(want, "after 6 attempt(s)")
			}
			for _, w := range want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, r.stderr)
				}
			}
			if n := front.count(false, "page=4&"); n != tt.requests {
				t.Errorf("%d requests for page 4, want %d", n, tt.requests)
			}
			st := ftStatus(t, dir, job)
			if st.Checkpoint != "page 4" || st.Status != "failed" || st.LastRun == nil || !strings.Contains(st.LastRun.Error, want[0]) {
				t.Errorf("status: %+v, last run %+v; want failed at page 4 with the error", st, st.LastRun)
			}
			if rows, _ := ftTableStats(t, filepath.Join(dir, "out.db"), "orders"); rows != 75 {
				t.Errorf("%d rows, want the 75 of pages 1-3", rows)
			}

			front.arm(nil)
			front.count(true)
			out := parseRun(t, idemsync(t, dir, nil, "run", job, "--json"))
			if out.Status != "completed" || out.RunID != st.LastRun.RunID {
				t.Errorf("next run: %+v, want run %d continued to completion", out, st.LastRun.RunID)
			}
			// Page 9 is short: page 10, empty, proves it the end
			// (docs/pagination.md).
			if n := front.count(false, "/page?"); n != 7 {
				t.Errorf("%d requests to finish, want 7 (pages 4 to 9, and 10 to prove 9 the last)", n)
			}
			assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(front.api))
		})
	}
}

// pagination.has_more decides the end: an empty page while it says true is
// a contradiction, fetched again and then a transient failure (exit 3,
// checkpoint intact), never the end; false ends the run even on a full
// page. Without has_more, the same empty page ends the run.
func TestHasMore(t *testing.T) {
	emptyButMore := ftReply(200, "application/json", `{"data":[],"meta":{"has_more":true}}`)

	t.Run("empty page while has_more is true", func(t *testing.T) {
		front := ftStartFront(t, fakeapi.Options{Records: 100})
		front.arm(ftOnPage("3", emptyButMore))
		dir := t.TempDir()
		job := writeJob(t, dir, "job.yaml", ftWithPagination("  has_more: meta.has_more\n")(styleJob("page", front.URL, "sqlite:out.db")))
		r := idemsync(t, dir, nil, "run", job)
		if r.code != 3 || !strings.Contains(r.stderr, "page 3 is empty but meta.has_more is true") {
			t.Fatalf("exit %d, want 3 naming has_more: %s", r.code, r.stderr)
		}
		if st := ftStatus(t, dir, job); st.Checkpoint != "page 3" || st.Status != "failed" {
			t.Errorf("status: %+v", st)
		}
		front.arm(nil)
		if r := idemsync(t, dir, nil, "run", job); r.code != 0 {
			t.Fatalf("after the API recovered: exit %d: %s", r.code, r.stderr)
		}
		assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(front.api))
	})

	t.Run("without has_more the empty page ends the run", func(t *testing.T) {
		front := ftStartFront(t, fakeapi.Options{Records: 100})
		front.arm(ftOnPage("3", emptyButMore))
		dir := t.TempDir()
		job := writeJob(t, dir, "job.yaml", styleJob("page", front.URL, "sqlite:out.db"))
		out := parseRun(t, idemsync(t, dir, nil, "run", job, "--json"))
		if out.Status != "completed" || out.Records != 50 {
			t.Errorf("%+v, want completed after 50 records (the control case)", out)
		}
	})

	t.Run("has_more false ends on a full page", func(t *testing.T) {
		front := ftStartFront(t, fakeapi.Options{Records: 100})
		dir := t.TempDir()
		job := writeJob(t, dir, "job.yaml", ftWithPagination("  has_more: meta.has_more\n")(styleJob("page", front.URL, "sqlite:out.db")))
		out := parseRun(t, idemsync(t, dir, nil, "run", job, "--json"))
		// 100 records in pages of 25: page 4 says has_more false, so no
		// empty fifth page is requested.
		if out.Status != "completed" || out.Pages != 4 || front.count(false, "/page?") != 4 {
			t.Errorf("%+v after %d requests, want completed after 4 pages and 4 requests", out, front.count(false, "/page?"))
		}
		assertEqualSource(t, readSQLite(t, filepath.Join(dir, "out.db")), sourceRows(front.api))
	})
}
