package e2e

import (
	"path/filepath"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// A replay of a range under a page-size cap the API does not announce reads
// the whole range: its page arithmetic follows the size the API serves, not
// pagination.size, and a replay that stops short of --to never says
// completed.
func TestReplayRangeUnderCap(t *testing.T) {
	tests := []struct {
		name, path, pag, from, to string
		first, last               int // ids the range must hold
	}{
		{"offset", "/offset", "  style: offset\n  size: 100\n", "0", "150", 1, 175},
		{"offset from inside", "/offset", "  style: offset\n  size: 100\n", "50", "150", 51, 175},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api, url := startAPI(t, fakeapi.Options{Records: 300, Seed: 21, Quirks: fakeapi.Quirks{PageCap: 25}})
			dir := t.TempDir()
			job := writeJob(t, dir, "job.yaml", epJob("rc", url+tt.path, "data", tt.pag, ""))
			r := idemsync(t, dir, nil, "replay", job, "--from", tt.from, "--to", tt.to, "--json")
			out := parseRun(t, r)
			if r.code != 0 || out.Status != "completed" {
				t.Fatalf("replay: exit %d, %+v\n%s", r.code, out, r.stderr)
			}
			got := readSQLite(t, filepath.Join(dir, "out.db"))
			src := sourceRows(api)
			for id := tt.first; id <= tt.last; id++ {
				if g, ok := got[id]; !ok || g != src[id] {
					t.Errorf("id %d of the range missing or wrong after a completed replay (%d rows)", id, len(got))
					break
				}
			}
		})
	}
}
