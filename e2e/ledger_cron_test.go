package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	gosync "sync"
	"testing"
	"time"
)

// examples/ledger/send-invoices.sh against a fake mail API that honours
// Idempotency-Key and fails one invoice's first send with a 503 and
// declines another (422): two copies of the script at once, then two more
// runs. Every invoice is sent exactly once except the declined one, which
// ends failed for good; the 503 one is sent by a later run.
func TestLedgerCronExample(t *testing.T) {
	for _, tool := range []string{"bash", "jq", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	var mu gosync.Mutex
	sends := map[string]int{}    // invoice body -> mails sent
	seen := map[string]bool{}    // idempotency keys answered
	attempts := map[string]int{} // invoice body -> requests
	api := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		inv := string(body)
		mu.Lock()
		defer mu.Unlock()
		attempts[inv]++
		switch {
		case strings.Contains(inv, `"id":3`) && attempts[inv] == 1:
			http.Error(w, "try later", http.StatusServiceUnavailable)
			return
		case strings.Contains(inv, `"id":4`):
			w.WriteHeader(http.StatusUnprocessableEntity)
			fmt.Fprint(w, `{"error":"bad address"}`)
			return
		}
		if k := r.Header.Get("Idempotency-Key"); !seen[k] {
			seen[k] = true
			sends[inv]++
		}
		fmt.Fprintf(w, `{"message_id":"m-%d"}`, len(seen))
	}))
	dir := t.TempDir()
	var lines []string
	for i := 1; i <= 6; i++ {
		lines = append(lines, fmt.Sprintf(`{"id":%d,"email":"c%d@example.com","amount":%d}`, i, i, 100*i))
	}
	invoices := filepath.Join(dir, "invoices.jsonl")
	if err := os.WriteFile(invoices, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	script, _ := filepath.Abs("../examples/ledger/send-invoices.sh")
	env := append(cleanEnv(), "PATH="+filepath.Dir(binary)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"IDEMSYNC_STATE="+filepath.Join(dir, "state.db"), "MAIL_API_URL="+api)
	run := func() string {
		c := exec.Command("bash", script, invoices)
		c.Env = env
		out, err := c.CombinedOutput()
		if err != nil {
			t.Errorf("send-invoices.sh: %v\n%s", err, out)
		}
		return string(out)
	}
	var wg gosync.WaitGroup
	outs := make([]string, 2)
	for i := range outs {
		wg.Add(1)
		go func() { defer wg.Done(); outs[i] = run() }()
	}
	wg.Wait()
	outs = append(outs, run(), run())
	t.Logf("runs:\n%s", strings.Join(outs, "\n---\n"))
	mu.Lock()
	defer mu.Unlock()
	for i, inv := range lines {
		want := 1
		if i == 3 {
			want = 0
		}
		if sends[inv] != want {
			t.Errorf("invoice %d sent %d times, want %d", i+1, sends[inv], want)
		}
	}
	if !strings.Contains(outs[3], "invoice-1:send: already sent") || !strings.Contains(outs[3], "invoice-4:send: needs a person") {
		t.Errorf("last run: %s", outs[3])
	}
	g, _ := key(t, dir, filepath.Join(dir, "state.db"), "get", "invoice-4:send", "--ns", "mail")
	if g.State != "failed" || !strings.Contains(string(g.Error), "bad address") {
		t.Errorf("declined invoice: %+v", g)
	}
}

// examples/ledger/send-invoices.sh run by two containers at once on one
// shared state (each in a PID namespace of its own, as docker runs it:
// the script is PID 1 in both), against a mail API that ignores
// Idempotency-Key and answers slowly: every invoice is posted once. The
// script's --owner was "cron-$$", the same "cron-1" in every container,
// so the second copy got the first one's live claim back (previous:
// reclaimed) and sent the invoice again (docs/ledger.md, "The same
// owner").
func TestLedgerCronExampleContainers(t *testing.T) {
	for _, tool := range []string{"bash", "jq", "curl", "unshare"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	if out, err := exec.Command("unshare", "--pid", "--fork", "true").CombinedOutput(); err != nil {
		t.Skipf("cannot make a PID namespace here: %v %s", err, out)
	}
	var mu gosync.Mutex
	posts := map[string]int{} // invoice body -> requests
	api := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		posts[string(body)]++
		mu.Unlock()
		time.Sleep(300 * time.Millisecond) // the window between claim and complete
		fmt.Fprint(w, `{"message_id":"m"}`)
	}))
	dir := t.TempDir()
	var lines []string
	for i := 1; i <= 3; i++ {
		lines = append(lines, fmt.Sprintf(`{"id":%d,"email":"c%d@example.com","amount":%d}`, i, i, 100*i))
	}
	invoices := filepath.Join(dir, "invoices.jsonl")
	if err := os.WriteFile(invoices, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	script, _ := filepath.Abs("../examples/ledger/send-invoices.sh")
	env := append(cleanEnv(), "PATH="+filepath.Dir(binary)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"IDEMSYNC_STATE="+filepath.Join(dir, "state.db"), "MAIL_API_URL="+api)
	var wg gosync.WaitGroup
	outs := make([]string, 2)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := exec.Command("unshare", "--pid", "--fork", "bash", script, invoices)
			c.Env = env
			out, err := c.CombinedOutput()
			if err != nil {
				t.Errorf("send-invoices.sh in a PID namespace: %v\n%s", err, out)
			}
			outs[i] = string(out)
		}()
	}
	wg.Wait()
	t.Logf("runs:\n%s", strings.Join(outs, "\n---\n"))
	mu.Lock()
	defer mu.Unlock()
	for i, inv := range lines {
		if posts[inv] > 1 {
			t.Errorf("invoice %d posted %d times by two containers, want once", i+1, posts[inv])
		}
	}
}
