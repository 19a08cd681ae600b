package cmd

import (
	"slices"
	"testing"
)

func TestSubcommandNames(t *testing.T) {
	for _, s := range subcommands {
		if got := s.build(newFactory(&IOStreams{})).Name(); got != s.name {
			t.Errorf("subcommand %q builds the command %q", s.name, got)
		}
	}
}

// A command line naming a command builds that command alone (a one-shot
// `idemsync key claim` process skips building the others); help,
// completion, no command and an unknown one get the whole tree.
func TestRootBuildsOnlyTheCommandRun(t *testing.T) {
	names := func(args ...string) []string {
		var out []string
		for _, c := range newCmdRootFor(newFactory(&IOStreams{}), args).Commands() {
			out = append(out, c.Name())
		}
		return out
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"key", "claim", "k"}, "key"},
		{[]string{"--state", "s.db", "key", "get", "k"}, "key"},
		{[]string{"-q", "--log-level", "debug", "--json", "key", "list"}, "key"},
		{[]string{"--state=s.db", "version"}, "version"},
		{[]string{"run", "job.yaml", "--resource", "key"}, "run"},
	} {
		if got := names(c.args...); !slices.Equal(got, []string{c.want}) {
			t.Errorf("%q built %v, want only %s", c.args, got, c.want)
		}
	}
	all := len(subcommands)
	for _, args := range [][]string{
		nil, {"help", "key"}, {"--help"}, {"__complete", "ke"}, {"nope"}, {"completion", "bash"},
		{"--", "key"}, {"--unknown-flag", "key"},
	} {
		if got := names(args...); len(got) < all {
			t.Errorf("%q built %v, want every command", args, got)
		}
	}
}
