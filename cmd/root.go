// Package cmd holds idemsync's cobra commands. main.go calls Main; tests
// call Execute with buffers.
package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/source/auth"

	"github.com/idemsync/idemsync/jobfile"

	"github.com/spf13/cobra"

	idsync "github.com/idemsync/idemsync/sync"
)

// globalOpts are the flags every command takes.
type globalOpts struct {
	state     string
	json      bool
	quiet     bool
	logFormat string
	logLevel  string
	jobName   string // the job's name once its file was read, for error objects
	gate      *jsonGate
	keyring   *auth.Keyring // the job file's refresh tokens, once it was read
	// onRunStart, when set (serve), is called as each run of a resource
	// is recorded in the state, before its first page.
	onRunStart func()
}

// writeResult prints a run's result object, through the gate when a
// second signal may print one too.
func (g *globalOpts) writeResult(ios *IOStreams, v any) {
	if g.gate != nil {
		g.gate.write(ios, v)
		return
	}
	writeJSON(ios, v)
}

// Main runs the command line and returns the process exit code. The first
// SIGINT/SIGTERM cancels the run's context (the page in flight finishes or
// is abandoned, the checkpoint is saved, exit 130); a second one exits at
// once with 130.
func Main() int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		cancel()
		<-sigs
		hardExit()
	}()
	return Execute(ctx, os.Args[1:], System())
}

// Execute runs the command line args with the given streams and returns the
// exit code; every exit code (docs/operations.md, "Exit codes") is decided
// here, from the error.
func Execute(ctx context.Context, args []string, ios *IOStreams) int {
	f := newFactory(ios)
	g := f.globals
	root := newCmdRootFor(f, args)
	root.SetArgs(args)
	return exitAfter(ios, g, root.ExecuteContext(ctx))
}

// exitAfter is the exit code of a command that returned err, printing the
// error unless the command printed it: what Execute does for the command
// line and serve for each request (cmd/serve.go).
func exitAfter(ios *IOStreams, g *globalOpts, err error) int {
	if err == nil {
		return exitOK
	}
	var reported *reportedError
	if errors.As(err, &reported) {
		return reported.code
	}
	code := exitCode(err)
	printError(ios, g, err, code)
	return code
}

// printError writes the error: with --json one object on stdout with every
// field of a run's result (docs/operations.md, "--json output"; the job's name
// when its file was read), a line (and hint) on stderr otherwise.
func printError(ios *IOStreams, g *globalOpts, err error, code int) {
	if g.json {
		if g.jobName == "" {
			g.jobName = jobfile.SpecName(err)
		}
		res := &idsync.Result{Job: g.jobName, Status: contract.RunFailed, Error: err.Error(), ExitCode: code}
		switch code {
		case exitLocked:
			res.Status = "locked"
		case exitNothing:
			res.Status = "nothing_to_resume"
		}
		writeJSON(ios, res)
		return
	}
	if g.jsonLogs() {
		writeErrorLog(ios, g, err.Error(), contract.Hint(err), code)
		return
	}
	fmt.Fprintf(ios.ErrOut, "error: %v\n", err)
	if h := contract.Hint(err); h != "" {
		fmt.Fprintf(ios.ErrOut, "hint: %s\n", h)
	}
}

// reportedError is an error whose output was already printed by its command.
type reportedError struct{ code int }

func (e *reportedError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// usageError marks invalid command-line usage (exit 2).
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// writeJSON writes v as one JSON line on stdout. A stdout that refuses it
// (a full disk, a closed pipe) is a warning on stderr: the command's
// outcome and exit code stand, and `status` still tells it
// (docs/operations.md, "--json output").
func writeJSON(ios *IOStreams, v any) {
	enc := json.NewEncoder(ios.Out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		slog.New(slog.NewTextHandler(ios.ErrOut, nil)).Warn("--json output not written", "err", err)
	}
}

// newCmdRoot is the idemsync command with every subcommand.
func newCmdRoot(f *Factory) *cobra.Command { return newCmdRootFor(f, nil) }

// newRootBase is the idemsync command with its global flags and no
// subcommand (tests add the one they parse).
func newRootBase(f *Factory) *cobra.Command {
	g := f.globals
	root := &cobra.Command{
		Use:   "idemsync",
		Short: "Copy a paginated HTTP/JSON API into a SQL table, safely resumable",
		Long: `idemsync copies a paginated HTTP/JSON API into a SQL table (SQLite or
PostgreSQL) so that any run may be killed, retried, resumed, overlapped or
replayed and the table still ends up equal to the source.

Exit codes: 0 done, 1 permanent failure, 2 invalid usage or spec, 3 transient
failure (retry later), 4 another run holds the lock, 5 nothing to resume,
130 interrupted (checkpoint saved).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       currentVersion().String(),
	}
	root.SetOut(f.IOStreams.Out)
	root.SetErr(f.IOStreams.ErrOut)
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &usageError{err: fmt.Errorf("%w (see %s --help)", err, c.CommandPath())}
	})
	pf := root.PersistentFlags()
	pf.StringVar(&g.state, "state", "", "state file (default: $IDEMSYNC_STATE, else the job's state:, else .idemsync/state.db beside the job file)")
	pf.BoolVar(&g.json, "json", false, "print one JSON object on stdout and nothing else there")
	pf.BoolVarP(&g.quiet, "quiet", "q", false, "print only warnings and errors; no progress bar")
	pf.StringVar(&g.logFormat, "log-format", "text", "log format on stderr: text or json")
	pf.StringVar(&g.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	root.CompletionOptions.DisableDefaultCmd = true // newCmdCompletion instead
	return root
}

// exactArgs is cobra.ExactArgs returning a usage error.
func exactArgs(n int) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if err := cobra.ExactArgs(n)(c, args); err != nil {
			return &usageError{err: fmt.Errorf("%s: %w", c.CommandPath(), err)}
		}
		return nil
	}
}

// jobFileArgs completes a job file argument: .yaml and .yml files.
func jobFileArgs(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return []string{"yaml", "yml"}, cobra.ShellCompDirectiveFilterFileExt
}

// statePath applies the precedence --state > $IDEMSYNC_STATE > the job's.
func (g *globalOpts) statePath(job *idsync.Job) string {
	switch {
	case g.state != "":
		return g.state
	case os.Getenv("IDEMSYNC_STATE") != "":
		return os.Getenv("IDEMSYNC_STATE")
	case job != nil:
		return job.StatePath
	}
	return idsync.DefaultStateFile
}
