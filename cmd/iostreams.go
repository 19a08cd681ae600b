package cmd

import (
	"io"
	"os"

	"golang.org/x/term"
)

// IOStreams are the streams a command reads and writes. Tests use buffers;
// the progress bar is only drawn when ErrTTY is set.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	ErrTTY bool // stderr is a terminal
}

// System returns the process's standard streams.
func System() *IOStreams {
	return &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr, ErrTTY: term.IsTerminal(int(os.Stderr.Fd()))}
}
