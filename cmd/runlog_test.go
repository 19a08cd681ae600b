package cmd

import (
	"strings"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// Under the progress bar the per-page lines are DEBUG (the bar shows the
// pages); without it they stay INFO. Either way one summary line per run
// is logged at INFO.
func TestPageLogLevel(t *testing.T) {
	_, url := startAPI(t, fakeapi.Options{Records: 120}) // 3 pages of 50
	tests := []struct {
		name      string
		tty       bool
		args      []string
		pageLines int
	}{
		{"no bar", false, nil, 3},
		{"bar", true, nil, 0},
		{"bar at debug", true, []string{"--log-level", "debug"}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := writeJob(t, t.TempDir(), "job.yaml", pageJob("logs", url))
			r := execute(t, tt.tty, append([]string{"run", job}, tt.args...)...)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			if n := strings.Count(r.stderr, "page committed"); n != tt.pageLines {
				t.Errorf("%d per-page lines, want %d:\n%s", n, tt.pageLines, r.stderr)
			}
			if n := strings.Count(r.stderr, "level=INFO msg=\"run finished\""); n != 1 {
				t.Errorf("%d INFO summary lines, want 1:\n%s", n, r.stderr)
			}
		})
	}
}
