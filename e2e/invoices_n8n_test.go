package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	gosync "sync"
	"testing"
	"time"

	"github.com/idemsync/idemsync/examples/invoices/fakes"
)

// The invoices story's two n8n workflows (examples/invoices), each
// imported into a real n8n and executed twice with the n8n CLI: over the
// Execute Command node (idemsync changes, key, changes ack) and over
// `idemsync serve` (HTTP Request nodes only). The fake billing API has 5
// invoices for the first execution. The email API accepts invoice 2's
// reminder and answers 500, and accepts invoice 4's and hangs past the
// workflow's timeout: both are failed as retryable, and the batch is
// acknowledged through invoice 1 only. Then 3 more invoices and 2
// updates are synced; the second execution gets the rest: the two
// failed reminders are claimed again with the same Idempotency-Key (the
// email API answers without sending again), the two that went through
// take the "already sent" branch, the new ones are sent. After it every
// invoice got exactly one reminder, every ledger key is completed and
// the feed is drained. It runs where n8n is installed (startN8n).
func TestInvoicesN8n(t *testing.T) {
	for _, wf := range []struct{ name, file, id string }{
		{"execute-command", "n8n-execute-command.json", "InvoiceRemindExe"},
		{"serve", "n8n-serve.json", "InvoiceRemindSrv"},
	} {
		t.Run(wf.name, func(t *testing.T) {
			t.Parallel() // each n8n command takes a minute or two
			dir := t.TempDir()
			seed := uint64(time.Now().UnixNano())
			billing, email := fakes.NewBilling(seed), fakes.NewEmail(seed)
			// Invoice 2's first reminder is accepted (the email API sends it
			// and keeps its answer) and answered 500; invoice 4's is accepted
			// and never answered (past EMAIL_TIMEOUT_MS). By invoice, not by
			// request: n8n's HTTP Request node sends its items at once.
			var mu gosync.Mutex
			tries := map[string]int{}
			mail := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(body))
				var req struct{ Invoice string }
				json.Unmarshal(body, &req)
				mu.Lock()
				tries[req.Invoice]++
				first := tries[req.Invoice] == 1
				mu.Unlock()
				if !first || (req.Invoice != "2" && req.Invoice != "4") {
					email.ServeHTTP(w, r)
					return
				}
				email.ServeHTTP(httptest.NewRecorder(), r)
				if req.Invoice == "2" {
					http.Error(w, `{"error":"internal error"}`, http.StatusInternalServerError)
					return
				}
				select {
				case <-r.Context().Done():
				case <-time.After(10 * time.Second):
				}
			})
			jobs := filepath.Join(dir, "jobs")
			data, err := os.ReadFile("../examples/invoices/invoices.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(jobs, 0o755); err != nil {
				t.Fatal(err)
			}
			writeJob(t, jobs, "invoices.yaml", string(data))
			job, state := filepath.Join(jobs, "invoices.yaml"), filepath.Join(dir, "state.db")
			env := []string{"BILLING_URL=" + serve(t, billing), "INVOICES_TARGET=sqlite:" + filepath.Join(dir, "billing.db"),
				"IDEMSYNC_STATE=" + state}
			n8nEnv := append([]string{"EMAIL_URL=" + serve(t, mail), "EMAIL_TIMEOUT_MS=1000", "JOB=" + job, "LEASE=2s"}, env...)
			if wf.name == "serve" {
				s := startServe(t, dir, jobs, env)
				n8nEnv = append(n8nEnv, "IDEMSYNC_SERVE_URL="+s.url, "IDEMSYNC_SERVE_TOKEN="+serveToken)
			}
			n8n := startN8n(t, dir, n8nEnv...)
			workflow, _ := filepath.Abs("../examples/invoices/" + wf.file)
			n8n.cmd("import:workflow", "--input="+workflow)
			sync := func() {
				if r := idemsync(t, dir, env, "run", job, "--quiet"); r.code != 0 {
					t.Fatalf("sync: exit %d\n%s%s", r.code, r.stdout, r.stderr)
				}
			}

			billing.Add(5)
			sync()
			first := n8n.execute(wf.id)
			t.Logf("first execution: %v", first)
			if fmt.Sprint(first["Branch on status"]) != "[5 0 0]" || fmt.Sprint(first["Send reminder (Idempotency-Key)"]) != "[3 2]" || fmt.Sprint(first["Ack"]) != "[1]" {
				t.Errorf("first execution: branch %v, send %v, ack %v; want 5 acquired, 3 sent and 2 failed, one ack",
					first["Branch on status"], first["Send reminder (Idempotency-Key)"], first["Ack"])
			}

			if got := email.Delivered(); len(got) != 5 || got["2"] != 1 || got["4"] != 1 {
				t.Errorf("after the first execution the email API delivered %v, want invoices 1 to 5 once (2 and 4 with their answers lost)", got)
			}

			billing.Add(3)
			billing.Update(2) // updates: no reminder
			sync()
			second := n8n.execute(wf.id)
			t.Logf("second execution: %v", second)
			if fmt.Sprint(second["Branch on status"]) != "[5 2 0]" || fmt.Sprint(second["Send reminder (Idempotency-Key)"]) != "[5 0]" || fmt.Sprint(second["Ack"]) != "[1]" {
				t.Errorf("second execution: branch %v, send %v, ack %v; want 5 acquired (2 retried, 3 new) and sent, 2 already sent, one ack",
					second["Branch on status"], second["Send reminder (Idempotency-Key)"], second["Ack"])
			}

			got := email.Delivered()
			for _, id := range billing.IDs() {
				if n := got[strconv.Itoa(id)]; n != 1 {
					t.Errorf("invoice %d got %d reminders, want 1 (all: %v)", id, n, got)
				}
			}
			// count decodes the JSON a command printed and returns how many
			// entries its list field has.
			count := func(r result, field string) int {
				var v map[string]json.RawMessage
				var list []json.RawMessage
				if r.code != 0 || json.Unmarshal([]byte(r.stdout), &v) != nil || (v[field] != nil && json.Unmarshal(v[field], &list) != nil) {
					t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
				}
				return len(list)
			}
			if n := count(idemsync(t, dir, env, "key", "list", "--ns", "reminders", "--status", "completed"), "keys"); n != len(billing.IDs()) {
				t.Errorf("%d completed reminders in the ledger, want %d", n, len(billing.IDs()))
			}
			if n := count(idemsync(t, dir, env, "changes", job, "--consumer", "reminders", "--ops", "I"), "events"); n != 0 {
				t.Errorf("%d events left in the feed after the second execution, want none", n)
			}
		})
	}
}
