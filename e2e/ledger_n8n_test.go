package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	gosync "sync"
	"testing"
)

// examples/n8n/ledger-workflow.json, imported into a real n8n and executed
// twice with the n8n CLI, against a fake mail API that honours
// Idempotency-Key and answers invoice 1002's first send with a 503. The
// first execution sends 1001 and 1003 and completes them, and fails 1002
// as retryable; the second replays: 1001 and 1003 take the "already sent"
// branch, 1002 "not now" (retry later), and nothing is sent again.
//
// It runs where n8n is installed (startN8n); it skips elsewhere.
func TestLedgerN8nWorkflow(t *testing.T) {
	var mu gosync.Mutex
	sends := map[string]int{} // invoice id -> mails sent
	seen := map[string]bool{}
	tries := map[string]int{}
	api := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var inv struct{ ID int }
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &inv); err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		id := strconv.Itoa(inv.ID)
		mu.Lock()
		defer mu.Unlock()
		tries[id]++
		if id == "1002" && tries[id] == 1 {
			http.Error(w, `{"error":"unavailable"}`, http.StatusServiceUnavailable)
			return
		}
		if k := r.Header.Get("Idempotency-Key"); !seen[k] {
			seen[k] = true
			sends[id]++
		}
		fmt.Fprintf(w, `{"message_id":"m-%s"}`, id)
	}))

	dir := t.TempDir()
	state := filepath.Join(dir, "state.db")
	n8n := startN8n(t, dir, "MAIL_API_URL="+api, "IDEMSYNC_STATE="+state)
	workflow, _ := filepath.Abs("../examples/n8n/ledger-workflow.json")
	n8n.cmd("import:workflow", "--input="+workflow)
	first := n8n.execute("IdemsyncLedger01")
	t.Logf("first execution: %v", first)
	if fmt.Sprint(first["Branch on status"]) != "[3 0 0]" || fmt.Sprint(first["Send (Idempotency-Key)"]) != "[2 1]" {
		t.Errorf("first execution: branch %v, send %v; want 3 acquired, 2 sent and 1 failed", first["Branch on status"], first["Send (Idempotency-Key)"])
	}
	for id, want := range map[string]string{"1001": "completed", "1002": "retry", "1003": "completed"} {
		g, _ := key(t, dir, state, "get", "invoice-"+id+":send", "--ns", "mail")
		if g.State != want {
			t.Errorf("after the first execution invoice %s is %q, want %q: %+v", id, g.State, want, g)
		}
		if want == "completed" && !strings.Contains(string(g.Result), "m-"+id) {
			t.Errorf("invoice %s: stored result %s, want the API's answer", id, g.Result)
		}
	}

	second := n8n.execute("IdemsyncLedger01")
	t.Logf("second execution: %v", second)
	if fmt.Sprint(second["Branch on status"]) != "[0 2 1]" || len(second["Send (Idempotency-Key)"]) != 0 {
		t.Errorf("second execution: branch %v, send %v; want 2 already sent, 1 not now, nothing sent", second["Branch on status"], second["Send (Idempotency-Key)"])
	}
	mu.Lock()
	defer mu.Unlock()
	if sends["1001"] != 1 || sends["1003"] != 1 || sends["1002"] != 0 {
		t.Errorf("mails sent per invoice: %v; want 1001 and 1003 once, 1002 not yet", sends)
	}
}
