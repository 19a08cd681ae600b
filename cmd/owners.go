package cmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/jobfile"
	"github.com/idemsync/idemsync/sink"
	idsync "github.com/idemsync/idemsync/sync"
)

// A job registers itself as a writer of its table (and as the only writer
// of its child tables) in the target database
// when it opens the target to write (run, resume, replay), and validate
// --connect refuses as the run would (docs/deletions.md, "One writer per
// swept table"). idemsync claim hands a table over.

// writerOf is job's identity as a writer of its table: its name in the
// state file and the state file's real path.
func writerOf(g *globalOpts, job *idsync.Job) contract.Writer {
	return contract.Writer{Job: job.Name, State: realPath(g.statePath(job)), Deletes: job.Target.Deletes}
}

// openWriting opens job's target and registers job as a writer of its
// table (with check: refuses as a registration would, registering
// nothing), before anything is fetched or written.
func openWriting(ctx context.Context, g *globalOpts, job *idsync.Job, log *slog.Logger, c contract.TableClaim) (contract.Sink, error) {
	s, err := sink.OpenTarget(ctx, job.Target.Conn(), log)
	if err != nil {
		return nil, err
	}
	c.Writer = writerOf(g, job)
	if err := claimTable(ctx, s, job, &job.Table, c); err != nil {
		s.Close()
		return nil, err
	}
	// Its child tables, at every depth, have it as their only writer.
	c.Writer.Deletes = contract.ChildRows
	var claimChildren func(t *contract.Table) error
	claimChildren = func(t *contract.Table) error {
		for i := range t.Children {
			if err := claimTable(ctx, s, job, &t.Children[i].Table, c); err != nil {
				return err
			}
			if err := claimChildren(&t.Children[i].Table); err != nil {
				return err
			}
		}
		return nil
	}
	if err := claimChildren(&job.Table); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// claimTable registers c on s for t, job's table or one of its child
// tables; a refusal's hint names the exact claim command of job's file.
func claimTable(ctx context.Context, s contract.Sink, job *idsync.Job, t *contract.Table, c contract.TableClaim) error {
	err := s.ClaimTable(ctx, t, c)
	if errors.Is(err, contract.ErrNotImplemented) {
		if c.Writer.Sweeps() {
			return contract.Errorf(contract.Invalid, "target.deletes: %s: this database cannot record the writers of its tables, so it cannot sweep", job.Table.String())
		}
		return nil
	}
	var e *contract.Error
	if errors.Is(err, contract.ErrSharedTable) && errors.As(err, &e) {
		e.Hint = strings.Replace(e.Hint, contract.ClaimCommand(""), claimCommandOf(job), 1)
	}
	return err
}

// claimCommandOf is the claim command for job: its file, and --resource
// for a resource of a file with several.
func claimCommandOf(job *idsync.Job) string {
	_, res, _ := strings.Cut(job.Name, jobfile.ResourceSep)
	return contract.ClaimCommand(job.File, res)
}

// claimOptions are the parsed command line of claim.
type claimOptions struct {
	io   *IOStreams
	g    *globalOpts
	file string
	only []string // --resource
}

func newCmdClaim(f *Factory, runF func(*claimOptions) error) *cobra.Command {
	o := &claimOptions{io: f.IOStreams, g: f.globals}
	c := &cobra.Command{
		Use:   "claim JOB.yaml [--resource NAME]",
		Short: "Make the job the writer of its target table, releasing every other job registered for it",
		Long: `Register each resource of the job file (or those named with --resource) as a
writer of its target table and release every other job registered for that
table in the target database. Use it when the job that wrote the table was
renamed, moved to another state file or removed: a job with target.deletes
soft or hard refuses a table another job is registered for, and every job
refuses a table registered to one that deletes. It fetches nothing and
writes no row.`,
		Args:              exactArgs(1),
		ValidArgsFunction: jobFileArgs,
		RunE: func(c *cobra.Command, args []string) error {
			o.file = args[0]
			if runF != nil {
				return runF(o)
			}
			return runClaim(c.Context(), o)
		},
	}
	c.Flags().StringArrayVar(&o.only, "resource", nil, "claim only this resource's table (repeatable)")
	return c
}

// runClaim registers the job file's resources as the writers of their
// tables.
func runClaim(ctx context.Context, o *claimOptions) error {
	g, ios := o.g, o.io
	only := o.only
	jf, err := jobfile.LoadResourcesFile(o.file)
	if err != nil {
		return err
	}
	g.jobName = jf.Name
	if err := checkOnly(jf, only, contract.KindRun); err != nil {
		return err
	}
	for _, r := range jf.Resources {
		if len(only) > 0 && !slices.Contains(only, r.Name) {
			continue
		}
		job := r.Job
		log, err := newLogger(ios.ErrOut, g.logFormat, g.logLevel, g.quiet, job.Secrets, job.Name)
		if err != nil {
			return &usageError{err: err}
		}
		s, err := openWriting(ctx, g, job, log, contract.TableClaim{TakeOver: true})
		if err != nil {
			return err
		}
		s.Close()
		if !g.quiet && !g.json {
			fmt.Fprintf(ios.Out, "%s: table %s is now written by job %s alone\n", jf.Name, job.Table.String(), job.Name)
		}
	}
	if g.json {
		writeJSON(ios, map[string]any{"job": jf.Name, "claimed": true, "exit_code": 0})
	}
	return nil
}
