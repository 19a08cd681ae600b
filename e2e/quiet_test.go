package e2e

import (
	"strings"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// A walk whose total is a multiple of the page size ends on a full page
// with the style's own end signal (no next cursor, URL, header or Link).
// When earlier pages of the walk carried that signal, the end is proven
// and --quiet prints nothing (issue 28: a false "the last page is full"
// warning on every cron tick). Only a first page that is full and ends
// the walk, where the signal was never seen, still warns: a wrong `next:`
// path looks the same (docs/pagination.md, "How a run knows it reached the end").
func TestQuietRunOfFullLastPageSaysNothing(t *testing.T) {
	t.Parallel()
	for _, style := range []string{"cursor", "cursor-url", "cursor-header", "link"} {
		t.Run(style, func(t *testing.T) {
			t.Parallel()
			_, url := startAPI(t, fakeapi.Options{Records: 100}) // 4 full pages of 25
			dir := t.TempDir()
			job := writeJob(t, dir, "job.yaml", styleJob(style, url, "sqlite:out.db"))
			r := idemsync(t, dir, nil, "run", job, "--quiet")
			if r.code != 0 || r.stderr != "" || r.stdout != "" {
				t.Errorf("run --quiet of 100 records in pages of 25: exit %d, want 0 and no output\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}

			_, url = startAPI(t, fakeapi.Options{Records: 25}) // one full page: the signal never seen
			dir = t.TempDir()
			job = writeJob(t, dir, "job.yaml", styleJob(style, url, "sqlite:out.db"))
			r = idemsync(t, dir, nil, "run", job, "--quiet")
			if r.code != 0 || !strings.Contains(r.stderr, "the first page is full") {
				t.Errorf("run --quiet of one full page: exit %d, want 0 and a warning\nstderr: %s", r.code, r.stderr)
			}
		})
	}
}
