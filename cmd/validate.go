package cmd

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/jobfile"

	"github.com/spf13/cobra"

	"github.com/idemsync/idemsync/sink"
	httpsource "github.com/idemsync/idemsync/source/http"
	idsync "github.com/idemsync/idemsync/sync"
)

// validateOptions are the parsed command line of validate.
type validateOptions struct {
	io      *IOStreams
	g       *globalOpts
	file    string
	connect bool
}

func newCmdValidate(f *Factory, runF func(*validateOptions) error) *cobra.Command {
	o := &validateOptions{io: f.IOStreams, g: f.globals}
	c := &cobra.Command{
		Use:   "validate JOB.yaml",
		Short: "Check the job file (and every ${VAR} it needs) without fetching",
		Long: `Check the job file and every ${VAR} it needs, without fetching anything.
With --connect, also request the first page (nothing is written) and connect
to the target database.`,
		Args:              exactArgs(1),
		ValidArgsFunction: jobFileArgs,
		RunE: func(c *cobra.Command, args []string) error {
			o.file = args[0]
			if runF != nil {
				return runF(o)
			}
			g, ios, connect := o.g, o.io, o.connect
			jf, err := jobfile.LoadResourcesFile(o.file)
			if err != nil {
				return err
			}
			g.jobName = jf.Name
			var plan idsync.SchemaPlan // validate --connect's pending schema changes, every resource's
			plan.Pending = []contract.SchemaChange{}
			for _, r := range jf.Resources {
				job := r.Job
				log, err := newLogger(ios.ErrOut, g.logFormat, g.logLevel, g.quiet, job.Secrets, job.Name)
				if err != nil {
					return &usageError{err: err}
				}
				if connect {
					p, err := checkConnect(c.Context(), g, job, log)
					if err != nil {
						if jf.Multi {
							return fmt.Errorf("resource %s: %w", r.Name, err)
						}
						return err
					}
					plan.Pending, plan.Warnings = append(plan.Pending, p.Pending...), append(plan.Warnings, p.Warnings...)
					for _, w := range p.Warnings {
						log.Warn(w)
					}
				}
			}
			first := jf.Resources[0].Job
			if g.json {
				out := map[string]any{"job": jf.Name, "valid": true, "connected": connect, "state": stateName(g.statePath(first))}
				if jf.Multi {
					out["resources"] = jf.Names()
				}
				if connect {
					out["pending_schema_changes"] = plan.Pending
					if plan.Warnings != nil {
						out["warnings"] = plan.Warnings
					}
				}
				writeJSON(ios, out)
				return nil
			}
			if g.quiet {
				return nil
			}
			if !jf.Multi {
				fmt.Fprintf(ios.Out, "%s: valid (%s pagination, target %s table %s)\n", first.Name, first.Pagination.Style,
					first.Secrets.Redact(sink.RedactURL(first.Target.URL)), first.Table.String())
			} else {
				fmt.Fprintf(ios.Out, "%s: valid (%d resources)\n", jf.Name, len(jf.Resources))
				for _, r := range jf.Resources {
					fmt.Fprintf(ios.Out, "  %s: %s pagination, target %s table %s\n", r.Name, r.Job.Pagination.Style,
						r.Job.Secrets.Redact(sink.RedactURL(r.Job.Target.URL)), r.Job.Table.String())
				}
			}
			if connect {
				fmt.Fprintln(ios.Out, "  API and database reachable")
				writePendingSchema(ios, plan)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&o.connect, "connect", false, "also request the first page and connect to the database")
	return c
}

// checkConnect fetches the first page (writing nothing) and opens the sink.
// A child resource's requests need a parent row ({parent.COL}): only its
// database is checked.
func checkConnect(ctx context.Context, g *globalOpts, job *idsync.Job, log *slog.Logger) (idsync.SchemaPlan, error) {
	if job.Parent != nil {
		s, err := openWriting(ctx, g, job, log, contract.TableClaim{Check: true})
		if err != nil {
			return idsync.SchemaPlan{}, err
		}
		log.Info("a child resource's API requests need a parent row: only its database was checked", "parent", job.Parent.Resource)
		return idsync.SchemaPlan{}, s.Close()
	}
	f := httpsource.NewFetcher(httpsource.ConfigOf(job), log)
	var store contract.Store
	// A rotated token must be kept; inferred columns are compared as the
	// state saved them. A state that does not exist is not created.
	if a := job.Source.Auth; a != nil && a.Type == idsync.AuthRefreshToken || job.Infer && !stateMissing(g.statePath(job)) {
		s, err := openStore(ctx, g.statePath(job), log)
		if err != nil {
			return idsync.SchemaPlan{}, err
		}
		defer s.Close()
		store = s
	}
	if err := installAuth(ctx, g, job, f, store, log); err != nil {
		return idsync.SchemaPlan{}, err
	}
	var saved []contract.Column
	if job.Infer && store != nil {
		js, err := store.Job(ctx, job.Name)
		if err != nil {
			return idsync.SchemaPlan{}, err
		}
		if js != nil {
			if saved, err = idsync.DecodeColumns(js.Columns); err != nil {
				return idsync.SchemaPlan{}, fmt.Errorf("job %s: the state's saved columns: %w", job.Name, err)
			}
		}
	}
	return idsync.CheckConnectWith(ctx, job, f, func(ctx context.Context) (contract.Sink, error) {
		return openWriting(ctx, g, job, log, contract.TableClaim{Check: true})
	}, saved)
}

// writePendingSchema prints validate --connect's pending schema changes
// (docs/job-file.md, "The schema contract").
func writePendingSchema(ios *IOStreams, plan idsync.SchemaPlan) {
	if len(plan.Pending) == 0 {
		fmt.Fprintln(ios.Out, "  no pending schema change")
		return
	}
	fmt.Fprintf(ios.Out, "  pending schema changes (%d):\n", len(plan.Pending))
	for _, c := range plan.Pending {
		change := "add " + c.To
		if c.From != "" {
			change = c.From + " → " + c.To
		}
		fmt.Fprintf(ios.Out, "    %s.%s: %s: %s\n", c.Table, c.Column, change, c.Reason)
	}
	for _, w := range plan.Warnings {
		fmt.Fprintf(ios.Out, "  warning: %s\n", w)
	}
}
