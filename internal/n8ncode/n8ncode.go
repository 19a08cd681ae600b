// Package n8ncode runs the JavaScript of an n8n Code node under node, for
// the tests of the n8n workflows in examples/: cmd's, after an Execute
// Command node, and e2e's, after an HTTP Request node to idemsync serve.
package n8ncode

import (
	"encoding/json"
	"os/exec"
	"testing"
)

// Outcome runs code as the Code node runs it, with in as the JSON of its
// input's first item, and returns the outcome the one item it returns
// sets.
func Outcome(t testing.TB, node, code string, in any) string {
	t.Helper()
	js, _ := json.Marshal(in)
	script := "const $input = { first: () => ({ json: " + string(js) + " }) };\n" +
		"const out = (function () {\n" + code + "\n})();\n" +
		"process.stdout.write(JSON.stringify(out));\n"
	out, err := exec.Command(node, "-e", script).CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v: %s", err, out)
	}
	var items []struct {
		JSON struct {
			Outcome string `json:"outcome"`
		} `json:"json"`
	}
	if err := json.Unmarshal(out, &items); err != nil || len(items) != 1 {
		t.Fatalf("the Code node returned %s: %v", out, err)
	}
	return items[0].JSON.Outcome
}
