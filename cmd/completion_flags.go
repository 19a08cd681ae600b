package cmd

import (
	"github.com/spf13/cobra"

	"github.com/idemsync/idemsync/jobfile"
)

// registerFlagCompletions makes flag values complete, not only commands
// and job files: --resource from the job file on the command line, the
// fixed values of --log-format and --log-level, and files of the right
// kind for --state, --metrics-file and --out.
func registerFlagCompletions(root *cobra.Command) {
	fixed := func(values ...string) cobra.CompletionFunc {
		return cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp)
	}
	files := func(exts ...string) cobra.CompletionFunc {
		return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return exts, cobra.ShellCompDirectiveFilterFileExt
		}
	}
	// Persistent flags: registered once, on the command that owns them.
	_ = root.RegisterFlagCompletionFunc("log-format", fixed("text", "json"))
	_ = root.RegisterFlagCompletionFunc("log-level", fixed("debug", "info", "warn", "error"))
	_ = root.RegisterFlagCompletionFunc("state", files("db"))
	perFlag := map[string]cobra.CompletionFunc{
		"resource":     resourceNames,
		"metrics-file": files("prom"),
		"out":          files("yaml", "yml"),
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for name, f := range perFlag {
			if c.LocalNonPersistentFlags().Lookup(name) != nil {
				_ = c.RegisterFlagCompletionFunc(name, f)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// resourceNames completes --resource with the resources of the job file
// given as the command's argument; reading it needs no credentials.
func resourceNames(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) == 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	f, _, err := jobfile.LoadForState(args[0])
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return f.Names(), cobra.ShellCompDirectiveNoFileComp
}
