package cmd

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// parsed is a command line parsed by parseCmd.
type parsed[O any] struct {
	opts   *O    // what runF received; nil when RunE refused before it
	err    error // RunE's error (cobra's own for a bad flag)
	stdout string
}

// code is the exit code Execute gives the parse's error.
func (p parsed[O]) code() int {
	if p.err == nil {
		return 0
	}
	return exitCode(p.err)
}

// parseCmd parses args with the command newCmd builds, under the root's
// global flags, and a runF that keeps its options and runs nothing.
func parseCmd[O any](t *testing.T, newCmd func(*Factory, func(*O) error) *cobra.Command, args ...string) parsed[O] {
	t.Helper()
	var out bytes.Buffer
	f := newFactory(&IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out})
	var p parsed[O]
	root := newRootBase(f)
	root.AddCommand(newCmd(f, func(o *O) error {
		p.opts = o
		return nil
	}))
	root.SetArgs(args)
	p.err = root.ExecuteContext(context.Background())
	p.stdout = out.String()
	return p
}
