package cmd

// Factory is what every command is built from (gh's cmdutil.Factory): the
// streams all output goes through and the flags every command takes,
// bound to the root command's persistent flags and read once cobra has
// parsed them.
//
// A command is a constructor newCmdX(f, runF) whose options struct holds
// the parsed flags and arguments; its RunE fills them, checks their usage,
// and calls runF when a test passed one, else the command's run function.
// Exit codes are decided in one place, Execute, from the error returned.
type Factory struct {
	IOStreams *IOStreams
	globals   *globalOpts
}

// newFactory is the factory of one command line run with ios.
func newFactory(ios *IOStreams) *Factory {
	return &Factory{IOStreams: ios, globals: &globalOpts{}}
}
