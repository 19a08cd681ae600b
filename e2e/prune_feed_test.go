package e2e

import (
	"strings"
	"testing"

	"github.com/idemsync/idemsync/feed"
	"github.com/idemsync/idemsync/internal/fakeapi"
)

// `idemsync prune JOB.yaml` prunes the job's change feed too
// (docs/changes.md, "Retention and gaps"), on SQLite and PostgreSQL
// targets: at the job's retention nothing young goes; with --keep 0s the
// events below every consumer's ack go, and its JSON says how many and how
// far; a consumer that comes after them is in a gap.
func TestPruneFeed(t *testing.T) {
	_, url := startAPI(t, fakeapi.Options{Records: 60})
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			job := changesJob(t, name, dir, url)
			runCode(t, dir, nil, 0, "run", job)
			ackFastAndSlow(t, dir, job)

			type pruned struct {
				Feed *struct {
					Job           string `json:"job"`
					Deleted       int64  `json:"events_deleted"`
					PrunedThrough int64  `json:"pruned_through"`
				} `json:"feed"`
			}
			var p pruned
			changesOut(t, dir, 0, &p, "prune", job, "--json")
			if p.Feed == nil || p.Feed.Deleted != 0 || p.Feed.PrunedThrough != 0 {
				t.Fatalf("prune at the job's retention (30d): %+v, want the feed reported and nothing deleted", p.Feed)
			}
			changesOut(t, dir, 0, &p, "prune", job, "--json", "--keep", "0s")
			if p.Feed == nil || p.Feed.Job != "orders-page" || p.Feed.Deleted != 10 || p.Feed.PrunedThrough != 10 {
				t.Fatalf("prune --keep 0s: %+v, want the 10 events both consumers acknowledged deleted", p.Feed)
			}
			var st feed.Report
			changesOut(t, dir, 0, &st, "changes", "status", job)
			if st.Events != 50 || st.First != 11 || st.PrunedThrough != 10 {
				t.Fatalf("status after prune: %+v", st)
			}
			wantLateGap(t, dir, job)
			r := changesOut(t, dir, 0, nil, "prune", job, "--keep", "0s")
			if !strings.Contains(r.stdout, "change feed orders-page: deleted 0 events") {
				t.Errorf("prune's text output: %s", r.stdout)
			}
		})
	}
}
