package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/checkpoint"
	"github.com/idemsync/idemsync/internal/fakeapi"
	"github.com/idemsync/idemsync/internal/n8ncode"
)

const serveWorkflow = "../examples/n8n/idemsync-serve-workflow.json"

// serveWorkflowNodes is the part of the serve workflow the tests read.
type serveWorkflowNodes struct {
	ID    string `json:"id"`
	Nodes []struct {
		Name        string         `json:"name"`
		Type        string         `json:"type"`
		Parameters  map[string]any `json:"parameters"`
		OnError     string         `json:"onError"`
		Credentials map[string]any `json:"credentials"`
	} `json:"nodes"`
}

// The n8n workflow over serve posts to the run endpoint with its token
// credential, never errors on an HTTP status, and its Code node sorts the
// real replies of a real server (run with node.js where installed) into
// the same four outcomes as the Execute Command workflow.
func TestServeN8nWorkflow(t *testing.T) {
	data, err := os.ReadFile(serveWorkflow)
	if err != nil {
		t.Fatal(err)
	}
	var w serveWorkflowNodes
	if err := json.Unmarshal(data, &w); err != nil {
		t.Fatalf("the workflow is not JSON: %v", err)
	}
	var code string
	for _, n := range w.Nodes {
		switch n.Type {
		case "n8n-nodes-base.httpRequest":
			p, _ := json.Marshal(n.Parameters)
			if n.Parameters["method"] != "POST" || !strings.HasSuffix(n.Parameters["url"].(string), "/jobs/orders/run") ||
				!strings.Contains(string(p), `"neverError":true`) || !strings.Contains(string(p), `"fullResponse":true`) ||
				n.OnError != "continueRegularOutput" || n.Credentials["httpHeaderAuth"] == nil {
				t.Errorf("the HTTP Request node: %s onError %q credentials %v", p, n.OnError, n.Credentials)
			}
		case "n8n-nodes-base.code":
			code, _ = n.Parameters["jsCode"].(string)
		case "n8n-nodes-base.executeCommand":
			t.Errorf("the serve workflow has an Execute Command node %q", n.Name)
		}
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node.js is not installed: the Code node is not exercised")
	}

	_, url := startAPI(t, fakeapi.Options{Records: 60})
	_, down := startAPI(t, fakeapi.Options{Records: 60, Faults: fakeapi.Faults{Rate: 1, Kinds: []string{fakeapi.Fault503}}})
	dir := t.TempDir()
	jobs := filepath.Join(dir, "jobs")
	if err := os.Mkdir(jobs, 0o755); err != nil {
		t.Fatal(err)
	}
	writeJob(t, jobs, "orders.yaml", styleJob("page", url, "sqlite:out.db"))
	writeJob(t, jobs, "down.yaml", strings.Replace(styleJob("cursor", down, "sqlite:down.db"), "attempts: 6", "attempts: 2", 1))
	writeJob(t, jobs, "locked.yaml", strings.Replace(styleJob("offset", url, "sqlite:locked.db"), "name: orders-offset", "name: locked", 1))
	writeJob(t, jobs, "invalid.yaml", strings.Replace(styleJob("page", url, "sqlite:out.db"), "style: page", "style: pages", 1))
	store, err := checkpoint.Open(context.Background(), filepath.Join(jobs, ".idemsync", "state.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	unlock, err := store.Lock(context.Background(), "locked")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	s := startServe(t, dir, jobs, nil)

	for _, c := range []struct {
		job, body, outcome string
		status             int
	}{
		{"orders", `{"max_pages":1}`, "partial", 200},
		{"orders", `{"time_limit":"14m"}`, "completed", 200},
		{"down", "", "retry_later", 503},
		{"locked", "", "retry_later", 409},
		{"invalid", "", "alert", 400},
		{"missing", "", "alert", 404},
	} {
		status, body := s.do(t, "POST", "/jobs/"+c.job+"/run", c.body)
		if status != c.status {
			t.Errorf("%s: HTTP %d, want %d: %s", c.job, status, c.status, body)
		}
		var parsed any
		if err := json.Unmarshal([]byte(body), &parsed); err != nil {
			t.Fatalf("%s: reply is not JSON: %s", c.job, body)
		}
		if got := n8ncode.Outcome(t, node, code, map[string]any{"body": parsed, "statusCode": status}); got != c.outcome {
			t.Errorf("%s (HTTP %d): outcome %q, want %q: %s", c.job, status, got, c.outcome, body)
		}
	}
	// A wrong token, a body n8n left as text, and no server at all.
	req := map[string]any{"body": `{"status":"failed","error":"missing or wrong bearer token","exit_code":2}`, "statusCode": 401}
	if got := n8ncode.Outcome(t, node, code, req); got != "alert" {
		t.Errorf("401: outcome %q, want alert", got)
	}
	if got := n8ncode.Outcome(t, node, code, map[string]any{"error": map[string]any{"message": "connect ECONNREFUSED 127.0.0.1:8787"}}); got != "alert" {
		t.Errorf("no server: outcome %q, want alert", got)
	}
}
