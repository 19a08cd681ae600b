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
	root := newRootCmd(&globalOpts{}, &IOStreams{})
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
