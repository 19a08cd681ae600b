package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// n8nRender renders an n8n parameter ("=…{{ expr }}…") for one item of
// an execution with node: the expressions see $json, $execution.id,
// $itemIndex and an empty $env, as n8n's do.
func n8nRender(t *testing.T, tpl string, item map[string]any, execID string, index int) string {
	t.Helper()
	in, _ := json.Marshal(map[string]any{"tpl": tpl, "json": item, "exec": execID, "index": index})
	js := `let s = ""; process.stdin.on("data", d => s += d); process.stdin.on("end", () => {
		const a = JSON.parse(s);
		if (!a.tpl.startsWith("=")) throw new Error("not an expression: " + a.tpl);
		process.stdout.write(a.tpl.slice(1).replace(/\{\{([\s\S]+?)\}\}/g, (_, e) =>
			String(new Function("$json", "$execution", "$itemIndex", "$env", "return (" + e + ")")(a.json, {id: a.exec}, a.index, {}))));
	});`
	c := exec.Command("node", "-e", js)
	c.Stdin = strings.NewReader(string(in))
	out, err := c.Output()
	if err != nil {
		t.Fatalf("render %s: %v", tpl, err)
	}
	return string(out)
}

// n8nNode returns the parameters of the node named name in an n8n
// workflow file.
func n8nNode(t *testing.T, file, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Nodes []struct {
			Name       string         `json:"name"`
			Parameters map[string]any `json:"parameters"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal(b, &wf); err != nil {
		t.Fatal(err)
	}
	for _, n := range wf.Nodes {
		if n.Name == name {
			return n.Parameters
		}
	}
	t.Fatalf("%s has no node %q", file, name)
	return nil
}

// The n8n examples' Claim node run for two items of one execution that
// are the same unit (an invoice listed twice, an event and its
// redelivery): the first item acquires, the second is in_progress, and
// the node retried for the first item gets its claim back. With --owner
// the execution id alone, both items were the same owner: the second got
// the first one's claim back (acquired, reclaimed) and the invoice went
// out twice (docs/ledger.md, "The same owner"). The HTTP example's body
// gives each item its own owner too.
func TestLedgerN8nOwnerPerItem(t *testing.T) {
	for _, tool := range []string{"node", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	dir := t.TempDir()
	state := filepath.Join(dir, "state.db")
	env := append(cleanEnv(), "PATH="+filepath.Dir(binary)+string(os.PathListSeparator)+os.Getenv("PATH"), "IDEMSYNC_STATE="+state)
	for _, c := range []struct {
		file string
		item map[string]any
	}{
		{"../examples/n8n/ledger-workflow.json", map[string]any{"id": 1001, "email": "a@example.com", "amount": 42}},
		{"../examples/invoices/n8n-execute-command.json", map[string]any{"key": "INV-7"}},
	} {
		tpl, _ := n8nNode(t, c.file, "Claim")["command"].(string)
		claim := func(index int) keyJSON {
			cmd := exec.Command("bash", "-c", n8nRender(t, tpl, c.item, "77", index))
			cmd.Env, cmd.Dir = env, dir
			out, err := cmd.Output()
			var k keyJSON
			if err != nil || json.Unmarshal(out, &k) != nil {
				t.Fatalf("%s: Claim: %v: %s", c.file, err, out)
			}
			return k
		}
		if k := claim(0); k.Status != "acquired" {
			t.Errorf("%s: item 0: %+v, want acquired", c.file, k)
		}
		if k := claim(1); k.Status != "in_progress" {
			t.Errorf("%s: item 1, the same unit: %+v, want in_progress", c.file, k)
		}
		if k := claim(0); k.Status != "acquired" || k.Previous != "reclaimed" {
			t.Errorf("%s: item 0 retried: %+v, want acquired, reclaimed", c.file, k)
		}
	}
	body, _ := n8nNode(t, "../examples/invoices/n8n-serve.json", "Claim")["jsonBody"].(string)
	owner := func(index int) string {
		var req struct{ Owner string }
		if err := json.Unmarshal([]byte(n8nRender(t, body, map[string]any{"key": "INV-7"}, "77", index)), &req); err != nil {
			t.Fatal(err)
		}
		return req.Owner
	}
	if a, b := owner(0), owner(1); a == b || a != owner(0) {
		t.Errorf("n8n-serve.json: owners %q and %q for two items, want one each, stable", a, b)
	}
}
