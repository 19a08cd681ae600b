package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/feed"
	"github.com/idemsync/idemsync/internal/fakeapi"
)

// The change feed over HTTP is `idemsync changes` (SQLite and PostgreSQL
// targets): after a run through the server, a consumer reads a leased
// batch, a second read under the lease is 409 (exit 4), the ack moves the
// consumer, a repeated ack is stale (exit 1, 409 with status stale), the
// CLI's changes status sees what the server acknowledged, and after a run
// pruned the acknowledged events a new consumer is in a gap (exit 1, 409
// with status gap).
func TestServeChanges(t *testing.T) {
	_, url := startAPI(t, fakeapi.Options{Records: 60})
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			jobs := filepath.Join(dir, "jobs")
			if err := os.Mkdir(jobs, 0o755); err != nil {
				t.Fatal(err)
			}
			job := writeJob(t, jobs, "orders.yaml", "retention: 3s\n"+changesSpec(t, name, dir, url))
			s := startServe(t, dir, jobs, nil)
			if code, body := s.do(t, "POST", "/jobs/orders/run", ""); code != 200 {
				t.Fatalf("run: %d %s", code, body)
			}
			code, body := s.do(t, "POST", "/jobs/orders/changes", `{"consumer":"mail","limit":50,"ops":["I","U"]}`)
			var b feed.Batch
			if err := json.Unmarshal([]byte(body), &b); code != 200 || err != nil || len(b.Events) != 50 || b.ID == "" ||
				b.Events[0].Op != "I" || !strings.HasPrefix(b.Events[0].LedgerKey, "orders-page:1:") {
				t.Fatalf("first batch: %d %v %s", code, err, body)
			}
			code, body = s.do(t, "POST", "/jobs/orders/changes", `{"consumer":"mail"}`)
			if code != 409 || !strings.Contains(body, `"exit_code":4`) || !strings.Contains(body, b.ID) {
				t.Errorf("a second read under the lease: %d %s", code, body)
			}
			ack := `{"consumer":"mail","batch":"` + b.ID + `"}`
			if code, body = s.do(t, "POST", "/jobs/orders/changes/ack", ack); code != 200 || !strings.Contains(body, `"acked":50`) {
				t.Errorf("ack: %d %s", code, body)
			}
			if code, body = s.do(t, "POST", "/jobs/orders/changes/ack", ack); code != 409 || !strings.Contains(body, `"exit_code":1`) || !strings.Contains(body, `"status":"stale"`) {
				t.Errorf("a repeated ack: %d %s", code, body)
			}
			if code, body = s.do(t, "POST", "/jobs/orders/changes", `{"consumer":"mail","ops":["X"]}`); code != 400 || !strings.Contains(body, `"exit_code":2`) {
				t.Errorf("ops X: %d %s", code, body)
			}
			var st feed.Report
			if code, body = s.do(t, "GET", "/jobs/orders/changes/status", ""); code != 200 || json.Unmarshal([]byte(body), &st) != nil ||
				st.Events != 60 || len(st.Consumers) != 1 || st.Consumers[0].Acked != 50 || st.Consumers[0].Pending != 10 {
				t.Errorf("status over HTTP: %d %s", code, body)
			}
			r := idemsync(t, dir, nil, "changes", "status", job)
			if r.code != 0 || !strings.Contains(r.stdout, `"acked":50`) {
				t.Errorf("the CLI's changes status: exit %d %s%s", r.code, r.stdout, r.stderr)
			}
			time.Sleep(3200 * time.Millisecond) // past the retention (3s, so that a slow first run does not prune its own events first): the next run prunes events 1 to 50
			if code, body := s.do(t, "POST", "/jobs/orders/run", ""); code != 200 {
				t.Fatalf("second run: %d %s", code, body)
			}
			code, body = s.do(t, "POST", "/jobs/orders/changes", `{"consumer":"late"}`)
			if code != 409 || !strings.Contains(body, `"exit_code":1`) || !strings.Contains(body, `"status":"gap"`) || !strings.Contains(body, "events 1 to 50 were pruned") {
				t.Errorf("a consumer behind the pruning: %d %s", code, body)
			}
		})
	}
}
