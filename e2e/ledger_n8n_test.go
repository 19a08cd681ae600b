package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	gosync "sync"
	"testing"
	"time"
)

// examples/n8n/ledger-workflow.json, imported into a real n8n and executed
// twice with the n8n CLI, against a fake mail API that honours
// Idempotency-Key and answers invoice 1002's first send with a 503. The
// first execution sends 1001 and 1003 and completes them, and fails 1002
// as retryable; the second replays: 1001 and 1003 take the "already sent"
// branch, 1002 "not now" (retry later), and nothing is sent again.
//
// It runs where n8n is installed: IDEMSYNC_TEST_N8N is the path of n8n's
// bin/n8n, IDEMSYNC_TEST_NODE a Node.js 24 (default: node on PATH), and
// n8n keeps its own data in a schema of IDEMSYNC_TEST_POSTGRES_URL's
// database. Without them it skips. Each n8n command takes a minute or two.
func TestLedgerN8nWorkflow(t *testing.T) {
	n8n := os.Getenv("IDEMSYNC_TEST_N8N")
	if n8n == "" {
		t.Skip("IDEMSYNC_TEST_N8N (the path of n8n's bin/n8n) is not set; n8n 2.x with Node.js 24 runs this test")
	}
	node := os.Getenv("IDEMSYNC_TEST_NODE")
	if node == "" {
		node = "node"
	}
	pg := postgresURL(t)
	schema := freshSchema(t, pg)
	u, err := url.Parse(pg)
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := u.User.Password()

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
	env := append(cleanEnv(),
		"PATH="+filepath.Dir(binary)+string(os.PathListSeparator)+filepath.Dir(node)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"N8N_USER_FOLDER="+filepath.Join(dir, "n8n"),
		"DB_TYPE=postgresdb", "DB_POSTGRESDB_HOST="+u.Hostname(), "DB_POSTGRESDB_PORT="+u.Port(),
		"DB_POSTGRESDB_DATABASE="+strings.TrimPrefix(u.Path, "/"), "DB_POSTGRESDB_USER="+u.User.Username(),
		"DB_POSTGRESDB_PASSWORD="+pw, "DB_POSTGRESDB_SCHEMA="+schema,
		`NODES_EXCLUDE=[]`, "N8N_BLOCK_ENV_ACCESS_IN_NODE=false", "N8N_DIAGNOSTICS_ENABLED=false",
		"N8N_RUNNERS_BROKER_PORT="+freePort(t),
		// The Code nodes run in n8n's task runner, whose start may take
		// longer than its 30 s grant on a loaded machine.
		"N8N_RUNNERS_GRANT_TOKEN_TTL=600", "N8N_RUNNERS_TASK_REQUEST_TIMEOUT=600",
		"MAIL_API_URL="+api, "IDEMSYNC_STATE="+state)
	n8nCmd := func(args ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
		defer cancel()
		c := exec.CommandContext(ctx, node, append([]string{n8n}, args...)...)
		c.Env, c.Dir = env, dir
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("n8n %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	workflow, _ := filepath.Abs("../examples/n8n/ledger-workflow.json")
	n8nCmd("import:workflow", "--input="+workflow)

	// items returns how many items each output of each node of an
	// execution got.
	execute := func() map[string][]int {
		out := n8nCmd("execute", "--id=IdemsyncLedger01", "--rawOutput")
		i := strings.Index(out, "\n{")
		if i < 0 {
			t.Fatalf("n8n execute printed no execution:\n%s", out)
		}
		var ex struct {
			Status string
			Data   struct {
				ResultData struct {
					Error   json.RawMessage
					RunData map[string][]struct {
						Data struct {
							Main [][]json.RawMessage
						}
					}
				}
			}
		}
		if err := json.NewDecoder(strings.NewReader(out[i+1:])).Decode(&ex); err != nil {
			t.Fatalf("n8n execute output: %v\n%s", err, out)
		}
		if ex.Status != "success" {
			t.Fatalf("execution %s: %s", ex.Status, ex.Data.ResultData.Error)
		}
		got := map[string][]int{}
		for name, runs := range ex.Data.ResultData.RunData {
			for _, r := range runs {
				for _, o := range r.Data.Main {
					got[name] = append(got[name], len(o))
				}
			}
		}
		return got
	}
	first := execute()
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

	second := execute()
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

// freePort is a TCP port on 127.0.0.1 nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}
