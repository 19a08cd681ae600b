package cmd

import (
	"context"
	"strings"
	"testing"
)

// Flag values complete (issue 28): resource names from the job file on
// the command line, the log format and level, state files.
func TestFlagValuesComplete(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"run", "../examples/shop-fanout.yaml", "--resource", ""}, []string{"orders", "order_items"}},
		{[]string{"status", "--log-format", ""}, []string{"text", "json"}},
		{[]string{"run", "x.yaml", "--log-level", ""}, []string{"debug", "info", "warn", "error"}},
		{[]string{"status", "--state", ""}, []string{"db"}},
	} {
		var out, errOut syncBuffer
		code := Execute(context.Background(), append([]string{"__complete"}, tt.args...), &IOStreams{Out: &out, ErrOut: &errOut})
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if code != 0 || len(lines) < 2 {
			t.Errorf("__complete %v: exit %d: %q %q", tt.args, code, out.String(), errOut.String())
			continue
		}
		got := lines[:len(lines)-1] // the last line is the directive
		for _, w := range tt.want {
			found := false
			for _, g := range got {
				found = found || strings.SplitN(g, "\t", 2)[0] == w
			}
			if !found {
				t.Errorf("__complete %v: %q lacks %q", tt.args, got, w)
			}
		}
	}
}

// completion --help names what bash needs besides the script: Debian's
// bash-completion package (issue 28).
func TestCompletionHelpNamesBashCompletion(t *testing.T) {
	r := execute(t, false, "completion", "--help")
	if r.code != 0 || !strings.Contains(r.stdout, "apt-get install bash-completion") {
		t.Errorf("completion --help: exit %d\n%s", r.code, r.stdout)
	}
}
