package cmd

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// The cron recipe's alert prints a status command that works as printed
// in an operator's shell (issue 28): sh expands the crontab's
// IDEMSYNC_STATE into it, so it names the state file the scheduler used.
func TestCronAlertNamesTheState(t *testing.T) {
	cron, err := os.ReadFile("../examples/cron/crontab")
	if err != nil {
		t.Fatal(err)
	}
	env := regexp.MustCompile(`(?m)^IDEMSYNC_STATE=(\S+)$`).FindSubmatch(cron)
	if env == nil {
		t.Fatal("the crontab sets no IDEMSYNC_STATE")
	}
	state := string(env[1])
	line := recipeCommands(t)["cron"]
	m := regexp.MustCompile(`echo ("[^"]*")`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("no alert echo in %q", line)
	}
	// What cron's sh prints on exit 1, with the crontab's environment.
	sh := exec.Command("sh", "-c", "rc=1; echo "+m[1])
	sh.Env = append(os.Environ(), "IDEMSYNC_STATE="+state)
	out, err := sh.Output()
	if err != nil {
		t.Fatal(err)
	}
	alert := strings.TrimSpace(string(out))
	i := strings.Index(alert, "idemsync status ")
	if i < 0 {
		t.Fatalf("the alert names no status command: %q", alert)
	}
	t.Setenv("IDEMSYNC_STATE", "") // the operator's shell has none
	args := strings.Fields(alert[i+len("idemsync "):])
	root := newCmdRoot(newFactory(&IOStreams{}))
	c, rest, err := root.Find(args)
	if err != nil || c.Name() != "status" {
		t.Fatalf("%v: %v", args, err)
	}
	if err := c.ParseFlags(rest); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	if got, _ := c.Flags().GetString("state"); got != state {
		t.Errorf("the alert's status command reads state %q, the crontab's runs use %q: %q", got, state, alert)
	}
}

// The n8n command takes every path from one variable, IDEMSYNC_DIR, that
// the user sets in n8n's environment (issue 28): run through sh with a
// stand-in idemsync that prints its job file and state, both are under it.
func TestN8nCommandPathsFromOneVariable(t *testing.T) {
	command := readWorkflow(t).param(t, "n8n-nodes-base.executeCommand", "command")
	if n := strings.Count(command, "/data/idemsync"); n != 1 {
		t.Errorf("the command names /data/idemsync %d times, want once (the default of IDEMSYNC_DIR): %q", n, command)
	}
	bin := t.TempDir()
	stub := "#!/bin/sh\necho \"state=$IDEMSYNC_STATE job=$2\"\n"
	if err := os.WriteFile(bin+"/idemsync", []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sh := exec.Command("sh", "-c", command)
	sh.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "IDEMSYNC_DIR="+dir, "IDEMSYNC_STATE=")
	out, err := sh.Output()
	if err != nil {
		t.Fatal(err)
	}
	want := "state=" + dir + "/state.db job=" + dir + "/jobs/orders.yaml"
	if got := strings.TrimSpace(string(out)); got != want {
		t.Errorf("with IDEMSYNC_DIR=%s the command runs %q, want %q", dir, got, want)
	}
	readme, err := os.ReadFile("../examples/n8n/README.md")
	if err != nil {
		t.Fatal(err)
	}
	steps := string(readme)
	if i := strings.Index(steps, "## Set it up: three steps"); i >= 0 {
		steps = steps[i:]
		if j := strings.Index(steps[3:], "\n## "); j >= 0 {
			steps = steps[:j+3]
		}
	} else {
		t.Fatal("the n8n README has no three-step setup section")
	}
	for _, want := range []string{"Node.js 24", `NODES_EXCLUDE="[]"`, "IDEMSYNC_DIR", "import:workflow"} {
		if !strings.Contains(steps, want) {
			t.Errorf("the n8n setup steps do not name %s", want)
		}
	}
	// The HTTP path comes first where it exists (issue 28 item 10): the
	// page leads with idemsync serve and links its docs.
	head := string(readme)[:strings.Index(string(readme), "## Set it up: three steps")]
	for _, want := range []string{"idemsync serve", "(../../docs/serve.md)"} {
		if !strings.Contains(head, want) {
			t.Errorf("the n8n README does not offer %s before the Execute Command steps", want)
		}
	}
}
