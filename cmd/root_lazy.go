package cmd

import (
	"strings"

	"github.com/spf13/cobra"
)

// subcommand is one of idemsync's commands, by the name it is called by.
type subcommand struct {
	name  string
	build func(f *Factory) *cobra.Command
}

// subcommands are idemsync's commands in the order help lists them;
// TestSubcommandNames holds each name to its command's.
var subcommands = []subcommand{
	{"run", func(f *Factory) *cobra.Command { return newCmdRun(f, nil) }},
	{"resume", func(f *Factory) *cobra.Command { return newCmdResume(f, nil) }},
	{"replay", func(f *Factory) *cobra.Command { return newCmdReplay(f, nil) }},
	{"status", func(f *Factory) *cobra.Command { return newCmdStatus(f, nil) }},
	{"show", func(f *Factory) *cobra.Command { return newCmdShow(f, nil) }},
	{"changes", func(f *Factory) *cobra.Command { return newCmdChanges(f, nil) }},
	{"init", func(f *Factory) *cobra.Command { return newInitCmd(f.globals, f.IOStreams) }},
	{"prune", func(f *Factory) *cobra.Command { return newCmdPrune(f, nil) }},
	{"claim", func(f *Factory) *cobra.Command { return newCmdClaim(f, nil) }},
	{"key", func(f *Factory) *cobra.Command { return newCmdKey(f, nil) }},
	{"state", newCmdState},
	{"validate", func(f *Factory) *cobra.Command { return newCmdValidate(f, nil) }},
	{"version", func(f *Factory) *cobra.Command { return newCmdVersion(f, nil) }},
	{"schema", func(f *Factory) *cobra.Command { return newCmdSchema(f, nil) }},
	{"completion", func(f *Factory) *cobra.Command { return newCmdCompletion(f, nil) }},
	{"serve", func(f *Factory) *cobra.Command { return newCmdServe(f, nil) }},
}

// newCmdRootFor is the idemsync command to run args with: with only the
// subcommand args name when they name one, so that a one-shot process
// (`idemsync key claim`, called per item by n8n) does not build every
// other command and its flags (docs/ledger.md, "Speed"); with all of them
// for help, completion, no command or an unknown one, whose output lists
// or suggests them, and for completion, whose scripts are made from the
// whole tree.
func newCmdRootFor(f *Factory, args []string) *cobra.Command {
	root := newRootBase(f)
	name := commandName(root, args)
	for _, s := range subcommands {
		if s.name == name && name != "completion" {
			root.AddCommand(s.build(f))
			return root
		}
	}
	for _, s := range subcommands {
		root.AddCommand(s.build(f))
	}
	registerFlagCompletions(root)
	return root
}

// commandName is the first argument of args that is not a global flag or
// its value: the subcommand cobra will run.
func commandName(root *cobra.Command, args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return "" // what follows is an argument, not a command
		case !strings.HasPrefix(a, "-"):
			return a
		}
		if strings.Contains(a, "=") {
			continue
		}
		var fl = root.PersistentFlags().Lookup(strings.TrimLeft(a, "-"))
		if !strings.HasPrefix(a, "--") && len(a) == 2 {
			fl = root.PersistentFlags().ShorthandLookup(a[1:])
		}
		if fl == nil {
			return "" // a flag only a subcommand knows: let cobra sort it out
		}
		if fl.NoOptDefVal == "" { // takes a value: the next argument
			i++
		}
	}
	return ""
}
