package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/feed"
	"github.com/idemsync/idemsync/internal/fakeapi"
)

// changesSpec is styleJob's page job with the change feed on: its target
// is out.db in dir, or with db "postgres" a table in a fresh PostgreSQL
// schema.
func changesSpec(t *testing.T, db, dir, url string) string {
	t.Helper()
	spec := styleJob("page", url, "sqlite:"+filepath.Join(dir, "out.db"))
	if db == "postgres" {
		pg := postgresURL(t)
		spec = pgJob("page", url, pg, freshSchema(t, pg))
	}
	return spec + "  changes: true\n"
}

// changesJob writes changesSpec as job.yaml in dir.
func changesJob(t *testing.T, db, dir, url string) string {
	t.Helper()
	return writeJob(t, dir, "job.yaml", changesSpec(t, db, dir, url))
}

// ackFastAndSlow has consumer fast read and acknowledge the whole feed,
// and consumer slow its first 10 events: those 10 are below every
// consumer's ack, the ones a prune may delete.
func ackFastAndSlow(t *testing.T, dir, job string) {
	t.Helper()
	var b feed.Batch
	changesOut(t, dir, 0, &b, "changes", job, "--consumer", "fast")
	changesOut(t, dir, 0, nil, "changes", "ack", job, "--consumer", "fast", "--batch", b.ID)
	changesOut(t, dir, 0, &b, "changes", job, "--consumer", "slow", "--limit", "10")
	changesOut(t, dir, 0, nil, "changes", "ack", job, "--consumer", "slow", "--batch", b.ID)
}

// changesOut runs an idemsync changes command, wants exit code, and
// decodes its JSON into v (when v is not nil).
func changesOut(t *testing.T, dir string, code int, v any, args ...string) result {
	t.Helper()
	r := idemsync(t, dir, nil, args...)
	if r.code != code {
		t.Fatalf("%v: exit %d, want %d\n%s%s", args, r.code, code, r.stdout, r.stderr)
	}
	if v != nil {
		if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, r.stdout)
		}
	}
	return r
}

// wantLateGap fails unless a new consumer, late, finds events 1 to 10
// pruned: exit 1, naming them.
func wantLateGap(t *testing.T, dir, job string) {
	t.Helper()
	if r := idemsync(t, dir, nil, "changes", job, "--consumer", "late"); r.code != 1 || !strings.Contains(r.stderr, "events 1 to 10 were pruned") {
		t.Fatalf("a consumer after the pruning: exit %d, want 1 and the gap\n%s", r.code, r.stderr)
	}
}

// The change feed through the binary, on SQLite and PostgreSQL: a first
// run records an insert per row, a consumer reads it in leased batches
// and acknowledges them, a second read under the lease is refused (exit
// 4), a repeated ack is stale (exit 1), an unchanged re-sync records no
// event, an update records one U, and an expired lease delivers the same
// events again under a new batch whose predecessor's ack is refused.
func TestChangesFeed(t *testing.T) {
	api, url := startAPI(t, fakeapi.Options{Records: 60})
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			job := changesJob(t, name, dir, url)
			// Before any run: no SQLite file to read (exit 1); on a database
			// server, an empty feed.
			if r := idemsync(t, dir, nil, "changes", job, "--consumer", "mail"); name == "sqlite" && (r.code != 1 || !strings.Contains(r.stderr, "run the job first")) ||
				name == "postgres" && (r.code != 0 || !strings.Contains(r.stdout, `"events":[]`)) {
				t.Errorf("changes before any run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			runCode(t, dir, nil, 0, "run", job)
			var b feed.Batch
			changesOut(t, dir, 0, &b, "changes", job, "--consumer", "mail", "--limit", "50")
			if len(b.Events) != 50 || b.ID == "" || b.Events[0].Op != "I" || !strings.HasPrefix(b.Events[0].LedgerKey, "orders-page:1:h") {
				t.Fatalf("first batch: %d events, id %q, first %+v", len(b.Events), b.ID, b.Events[0])
			}
			if r := idemsync(t, dir, nil, "changes", job, "--consumer", "mail"); r.code != 4 || !strings.Contains(r.stderr, b.ID) {
				t.Fatalf("second read under the lease: exit %d, want 4 naming the batch\n%s", r.code, r.stderr)
			}
			changesOut(t, dir, 0, nil, "changes", "ack", job, "--consumer", "mail", "--batch", b.ID)
			if r := idemsync(t, dir, nil, "changes", "ack", job, "--consumer", "mail", "--batch", b.ID); r.code != 1 || !strings.Contains(r.stderr, "stale") {
				t.Fatalf("second ack: exit %d, want 1 and stale\n%s", r.code, r.stderr)
			}
			// An unchanged re-sync records nothing.
			runCode(t, dir, nil, 0, "run", job)
			var st feed.Report
			changesOut(t, dir, 0, &st, "changes", "status", job)
			if st.Events != 60 || len(st.Consumers) != 1 || st.Consumers[0].Pending != 10 {
				t.Fatalf("status after an unchanged re-sync: %+v, want 60 events and mail 10 behind", st)
			}
			api.Update(7, func(r *fakeapi.Record) { r.Name = "renamed" })
			runCode(t, dir, nil, 0, "run", job)
			changesOut(t, dir, 0, &b, "changes", job, "--consumer", "mail", "--lease", "50ms")
			last := b.Events[len(b.Events)-1]
			if len(b.Events) != 11 || last.Op != "U" || last.Key != "7" || last.Run == b.Events[0].Run {
				t.Fatalf("after an update: %d events, last %+v", len(b.Events), last)
			}
			time.Sleep(100 * time.Millisecond)
			var again feed.Batch
			changesOut(t, dir, 0, &again, "changes", job, "--consumer", "mail", "--ops", "U")
			if again.ID == b.ID || len(again.Events) != 1 || again.Events[0].Seq != last.Seq {
				t.Fatalf("after the lease ran out: %+v, want U:7 again under a new batch", again)
			}
			if r := idemsync(t, dir, nil, "changes", "ack", job, "--consumer", "mail", "--batch", b.ID); r.code != 1 || !strings.Contains(r.stderr, "replaced") {
				t.Fatalf("ack of the replaced batch: exit %d\n%s", r.code, r.stderr)
			}
			changesOut(t, dir, 0, nil, "changes", "ack", job, "--consumer", "mail", "--batch", again.ID)
			changesOut(t, dir, 0, &st, "changes", "status", job)
			if st.Consumers[0].Pending != 0 || st.Consumers[0].Acked != st.Last {
				t.Fatalf("status at the end: %+v", st)
			}
		})
	}
}

// Retention through the binary (docs/changes.md, "Retention and gaps"): a run
// prunes the events every consumer acknowledged that are older than the
// job's retention, and no more; a consumer that comes after them gets an
// explicit gap (exit 1 naming the events) until reset --to oldest.
func TestChangesRetention(t *testing.T) {
	_, url := startAPI(t, fakeapi.Options{Records: 60})
	dir := t.TempDir()
	job := writeJob(t, dir, "job.yaml", "retention: 3s\n"+changesSpec(t, "sqlite", dir, url))
	runCode(t, dir, nil, 0, "run", job)
	ackFastAndSlow(t, dir, job)
	time.Sleep(3200 * time.Millisecond) // past the retention (3s: a first run slower than it would prune its own events before any consumer came)
	runCode(t, dir, nil, 0, "run", job)
	var st feed.Report
	changesOut(t, dir, 0, &st, "changes", "status", job)
	if st.Events != 50 || st.PrunedThrough != 10 || st.First != 11 {
		t.Fatalf("after the run: %+v, want the 10 events both consumers acknowledged pruned", st)
	}
	wantLateGap(t, dir, job)
	changesOut(t, dir, 0, &st, "changes", "status", job)
	if c := st.Consumers[1]; c.Name != "late" || c.State != feed.StateGap {
		t.Fatalf("late's status: %+v", st.Consumers)
	}
	changesOut(t, dir, 0, nil, "changes", "reset", job, "--consumer", "late", "--to", "oldest")
	var b feed.Batch
	changesOut(t, dir, 0, &b, "changes", job, "--consumer", "late", "--limit", "5")
	if b.Events[0].Seq != 11 {
		t.Fatalf("late after reset --to oldest starts at %d, want 11", b.Events[0].Seq)
	}
}
