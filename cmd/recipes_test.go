package cmd

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
	"github.com/idemsync/idemsync/internal/n8ncode"
)

// n8nWorkflow is the part of an n8n workflow export the tests read.
type n8nWorkflow struct {
	Nodes []struct {
		Name       string         `json:"name"`
		Type       string         `json:"type"`
		Parameters map[string]any `json:"parameters"`
	} `json:"nodes"`
	Connections map[string]struct {
		Main [][]struct {
			Node string `json:"node"`
		} `json:"main"`
	} `json:"connections"`
}

func readWorkflow(t *testing.T) *n8nWorkflow {
	t.Helper()
	data, err := os.ReadFile("../examples/n8n/idemsync-workflow.json")
	if err != nil {
		t.Fatal(err)
	}
	var w n8nWorkflow
	if err := json.Unmarshal(data, &w); err != nil {
		t.Fatalf("the n8n workflow is not valid JSON: %v", err)
	}
	return &w
}

func (w *n8nWorkflow) param(t *testing.T, typ, key string) string {
	t.Helper()
	for _, n := range w.Nodes {
		if n.Type == typ {
			s, _ := n.Parameters[key].(string)
			return s
		}
	}
	t.Fatalf("no %s node", typ)
	return ""
}

// recipeCommands returns every idemsync command line of the recipes.
func recipeCommands(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{"n8n": readWorkflow(t).param(t, "n8n-nodes-base.executeCommand", "command")}
	cron, err := os.ReadFile("../examples/cron/crontab")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(cron), "\n") {
		if strings.HasPrefix(line, "*/15 ") {
			out["cron"] = line
		}
	}
	unit, err := os.ReadFile("../examples/systemd/idemsync@.service")
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?m)^ExecStart=(.*)$`).FindStringSubmatch(string(unit)); m != nil {
		out["systemd"] = m[1]
	}
	if len(out) != 3 {
		t.Fatalf("recipes found: %v", out)
	}
	return out
}

// Every recipe runs a real command with real flags, one job file, and a
// time limit under its 15-minute schedule.
func TestRecipesUseRealFlags(t *testing.T) {
	for name, line := range recipeCommands(t) {
		i := strings.Index(line, "idemsync run ")
		if i < 0 {
			t.Errorf("%s: no `idemsync run` in %q", name, line)
			continue
		}
		var args []string
		for _, f := range strings.Fields(line[i+len("idemsync "):]) {
			if strings.ContainsAny(f, ";|&>") {
				break
			}
			args = append(args, f)
		}
		root := newCmdRoot(newFactory(&IOStreams{}))
		c, rest, err := root.Find(args)
		if err != nil || c.Name() != "run" {
			t.Errorf("%s: %v: %v", name, args, err)
			continue
		}
		if err := c.ParseFlags(rest); err != nil {
			t.Errorf("%s: %v: %v", name, args, err)
		}
		if n := len(c.Flags().Args()); n != 1 {
			t.Errorf("%s: %d job files in %v", name, n, args)
		}
		if tl, _ := c.Flags().GetDuration("time-limit"); tl.Minutes() != 14 {
			t.Errorf("%s: --time-limit %v, want 14m", name, tl)
		}
	}
}

// The workflow branches a run's JSON into the four outcomes; its Code node
// is run with node.js, when installed, on real outputs of idemsync.
func TestN8nWorkflow(t *testing.T) {
	w := readWorkflow(t)
	if cmd := w.param(t, "n8n-nodes-base.executeCommand", "command"); !strings.Contains(cmd, "--json") || !strings.HasSuffix(cmd, "|| true") {
		t.Errorf("the command must print JSON and exit 0: %q", cmd)
	}
	outs := w.Connections["Outcome"].Main
	if len(outs) != 4 || outs[3][0].Node != "Alert" {
		t.Errorf("the Outcome switch has %d outputs: %+v", len(outs), outs)
	}
	code := w.param(t, "n8n-nodes-base.code", "jsCode")
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node.js is not installed: the Code node is not exercised")
	}

	_, url := startAPI(t, fakeapi.Options{Records: 60})
	_, down := startAPI(t, fakeapi.Options{Records: 60, Faults: fakeapi.Faults{Rate: 1, Kinds: []string{fakeapi.Fault503}}})
	dir := t.TempDir()
	job := writeJob(t, dir, "orders.yaml", pageJob("orders", url))
	failing := writeJob(t, dir, "down.yaml", strings.Replace(pageJob("down", down), "  min_wait: 5ms\n", "  attempts: 2\n  min_wait: 5ms\n", 1))
	locked := writeJob(t, dir, "locked.yaml", pageJob("locked", url))
	invalid := writeJob(t, dir, "invalid.yaml", strings.Replace(pageJob("invalid", url), "style: page", "style: pages", 1))
	store, err := openStore(context.Background(), filepath.Join(dir, "state.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	unlock, err := store.Lock(context.Background(), "locked")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()

	for _, tc := range []struct {
		args    []string
		outcome string
	}{
		{[]string{"run", job, "--max-pages", "1"}, "partial"},
		{[]string{"run", job}, "completed"},
		{[]string{"run", failing}, "retry_later"},
		{[]string{"run", locked}, "retry_later"},
		{[]string{"run", filepath.Join(dir, "missing.yaml")}, "alert"},
		{[]string{"run", invalid}, "alert"},
		{[]string{"run", strings.Replace(job, "orders.yaml", "down.yaml", 1), "--bogus"}, "alert"},
	} {
		r := execute(t, false, append(tc.args, "--json", "--quiet")...)
		if got := runCodeNode(t, node, code, r.stdout, r.stderr); got != tc.outcome {
			t.Errorf("%v (exit %d): outcome %q, want %q; stdout %q", tc.args, r.code, got, tc.outcome, r.stdout)
		}
	}
	if got := runCodeNode(t, node, code, "", "sh: idemsync: not found"); got != "alert" {
		t.Errorf("no output: outcome %q, want alert", got)
	}
}

// runCodeNode runs the Code node's JavaScript on an Execute Command output
// and returns the outcome it sets.
func runCodeNode(t *testing.T, node, code, stdout, stderr string) string {
	t.Helper()
	return n8ncode.Outcome(t, node, code, map[string]any{"exitCode": 0, "stdout": strings.TrimSpace(stdout), "stderr": strings.TrimSpace(stderr)})
}

// The workflow imports with `n8n import:workflow` (which needs an id) and
// runs with `n8n execute --id` (which needs a trigger other than the
// schedule): a Manual Trigger and the schedule both start the same command.
// The alert names the job from the result, never a hard-coded name.
func TestN8nWorkflowImportable(t *testing.T) {
	data, err := os.ReadFile("../examples/n8n/idemsync-workflow.json")
	if err != nil {
		t.Fatal(err)
	}
	var top struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	if err := json.Unmarshal(data, &top); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[A-Za-z0-9]{16}$`).MatchString(top.ID) {
		t.Errorf("workflow id %q: want 16 letters or digits, as n8n makes them", top.ID)
	}
	w := readWorkflow(t)
	var command string
	triggers := map[string]string{}
	for _, n := range w.Nodes {
		switch n.Type {
		case "n8n-nodes-base.manualTrigger", "n8n-nodes-base.scheduleTrigger":
			triggers[n.Type] = n.Name
		case "n8n-nodes-base.executeCommand":
			command = n.Name
		}
	}
	if len(triggers) != 2 {
		t.Fatalf("triggers %v: want a manual trigger and a schedule trigger", triggers)
	}
	for typ, name := range triggers {
		outs := w.Connections[name].Main
		if len(outs) != 1 || len(outs[0]) != 1 || outs[0][0].Node != command {
			t.Errorf("%s %q is wired to %+v, want the %q node", typ, name, outs, command)
		}
	}
	msg := w.param(t, "n8n-nodes-base.stopAndError", "errorMessage")
	if !strings.Contains(msg, "$json.job") || strings.Contains(msg, "orders") {
		t.Errorf("the alert must name the job from the result, not a fixed name: %q", msg)
	}
}
