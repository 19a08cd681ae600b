package cmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/feed"
	"github.com/idemsync/idemsync/sink"
	idsync "github.com/idemsync/idemsync/sync"
)

// changesOptions are the parsed command line of changes (the next
// batch) and of its subcommands ack, status and reset.
type changesOptions struct {
	io        *IOStreams
	g         *globalOpts
	file      string
	consumer  string
	resources []string
	ops       []string
	limit     int
	lease     time.Duration
	batch     string // ack
	through   int64  // ack
	// throughSet is whether --through was given: 0 is then an error, not
	// the whole batch (an ack of nothing acted on must not be one of all).
	throughSet bool
	to         string // reset
}

func newCmdChanges(f *Factory, runF func(*changesOptions) error) *cobra.Command {
	o := &changesOptions{io: f.IOStreams, g: f.globals}
	c := &cobra.Command{
		Use:   "changes JOB.yaml --consumer NAME",
		Short: "Print a consumer's next batch of the job's change feed",
		Long: `Print, as one JSON object, the next events of the job's change feed
(target.changes: true) for one consumer: each row a run inserted (I),
updated (U) or deleted (D), with a suggested ledger key (idemsync key).
The batch is leased to the consumer for --lease: acknowledge it with
changes ack; unacknowledged, it is delivered again after the lease (at
least once). Consumers are independent. See docs/changes.md.`,
		Args:              exactArgs(1),
		ValidArgsFunction: jobFileArgs,
		RunE: func(c *cobra.Command, args []string) error {
			o.file = args[0]
			if err := o.checkNext(); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return runChanges(c.Context(), o)
		},
	}
	fl := c.Flags()
	fl.StringVar(&o.consumer, "consumer", "", "the consumer reading (required)")
	fl.StringSliceVar(&o.resources, "resource", nil, "only events of these resources (repeat or comma-separate)")
	fl.StringSliceVar(&o.ops, "ops", nil, "only these operations: I, U, D (comma-separated)")
	fl.IntVar(&o.limit, "limit", feed.DefaultLimit, "at most this many events")
	fl.DurationVar(&o.lease, "lease", feed.DefaultLease, "how long the batch is the consumer's before it is delivered again")
	c.AddCommand(newCmdChangesAck(f, nil), newCmdChangesStatus(f, nil), newCmdChangesReset(f, nil))
	return c
}

// checkNext refuses a read of the next batch without a consumer, or
// with a limit, lease or operation out of range (also serve's,
// cmd/serve.go).
func (o *changesOptions) checkNext() error {
	if err := o.check(true); err != nil {
		return err
	}
	if o.limit < 1 || o.limit > feed.MaxLimit {
		return &usageError{err: fmt.Errorf("--limit must be between 1 and %d", feed.MaxLimit)}
	}
	if o.lease <= 0 {
		return &usageError{err: fmt.Errorf("--lease must be positive")}
	}
	if err := feed.CheckOps(o.ops); err != nil {
		return &usageError{err: err}
	}
	return nil
}

// check refuses a command line without a consumer (when it needs one),
// or with a consumer's name PostgreSQL's text cannot hold or index (a NUL
// byte, bytes that are not UTF-8, more than 255 bytes): a database's
// refusal of it read as a transient failure, retried for ever
// (docs/changes.md).
func (o *changesOptions) check(needConsumer bool) error {
	if needConsumer && strings.TrimSpace(o.consumer) == "" {
		return &usageError{err: fmt.Errorf("--consumer is required")}
	}
	if needConsumer {
		if err := contract.CheckKey("--consumer", o.consumer); err != nil {
			return &usageError{err: err}
		}
	}
	return nil
}

func newCmdChangesAck(f *Factory, runF func(*changesOptions) error) *cobra.Command {
	o := &changesOptions{io: f.IOStreams, g: f.globals}
	c := &cobra.Command{
		Use:   "ack JOB.yaml --consumer NAME --batch ID [--through SEQ]",
		Short: "Acknowledge a consumer's batch of the change feed",
		Long: `Acknowledge the consumer's batch (all of it, or through event SEQ):
its next batch starts after it. A batch that is no longer the consumer's
(acknowledged already, or delivered again after its lease ran out) is
refused (exit 1) and nothing moves.`,
		Args:              exactArgs(1),
		ValidArgsFunction: jobFileArgs,
		RunE: func(c *cobra.Command, args []string) error {
			o.file, o.throughSet = args[0], c.Flags().Changed("through")
			if err := o.checkAck(); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return runChangesAck(c.Context(), o)
		},
	}
	fl := c.Flags()
	fl.StringVar(&o.consumer, "consumer", "", "the consumer (required)")
	fl.StringVar(&o.batch, "batch", "", "the batch id changes printed (required)")
	fl.Int64Var(&o.through, "through", 0, "acknowledge only through this event (default: the whole batch)")
	return c
}

func newCmdChangesStatus(f *Factory, runF func(*changesOptions) error) *cobra.Command {
	o := &changesOptions{io: f.IOStreams, g: f.globals}
	c := &cobra.Command{
		Use:               "status JOB.yaml",
		Short:             "Print the change feed's events and every consumer's position",
		Args:              exactArgs(1),
		ValidArgsFunction: jobFileArgs,
		RunE: func(c *cobra.Command, args []string) error {
			o.file = args[0]
			if runF != nil {
				return runF(o)
			}
			return runChangesStatus(c.Context(), o)
		},
	}
	return c
}

func newCmdChangesReset(f *Factory, runF func(*changesOptions) error) *cobra.Command {
	o := &changesOptions{io: f.IOStreams, g: f.globals}
	c := &cobra.Command{
		Use:   "reset JOB.yaml --consumer NAME [--to oldest|latest|SEQ]",
		Short: "Move a consumer in the change feed",
		Long: `Move the consumer (created when missing) to after event --to: oldest
(the oldest event kept comes next: how a consumer in a gap accepts the
loss), latest (only events from now on), or a number (0: from the start).
Its batch, if any, becomes stale.`,
		Args:              exactArgs(1),
		ValidArgsFunction: jobFileArgs,
		RunE: func(c *cobra.Command, args []string) error {
			o.file = args[0]
			if err := o.check(true); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return withFeed(c.Context(), o, func(ctx context.Context, j *feed.Job) (any, error) {
				at, err := feed.Reset(ctx, j.DB, j.Name, o.consumer, o.to)
				return map[string]any{"job": j.Name, "consumer": o.consumer, "acked": at}, err
			})
		},
	}
	c.Flags().StringVar(&o.consumer, "consumer", "", "the consumer (required)")
	c.Flags().StringVar(&o.to, "to", "0", "oldest, latest or an event number")
	return c
}

// runChanges prints the consumer's next batch.
func runChanges(ctx context.Context, o *changesOptions) error {
	return withFeed(ctx, o, func(ctx context.Context, j *feed.Job) (any, error) {
		if err := j.CheckResources(o.resources); err != nil {
			return nil, err
		}
		return feed.Next(ctx, j.DB, j.Name, feed.Options{Consumer: o.consumer, Resources: o.resources, Ops: o.ops, Limit: o.limit, Lease: o.lease})
	})
}

// checkAck refuses an ack without a consumer or batch, or through a
// negative event.
func (o *changesOptions) checkAck() error {
	if err := o.check(true); err != nil {
		return err
	}
	if o.batch == "" {
		return &usageError{err: fmt.Errorf("--batch is required")}
	}
	if o.through < 0 || o.throughSet && o.through == 0 {
		// A script passing the last event it acted on passes 0 when it
		// acted on none: taken as "the whole batch", that ack would lose
		// every event of it (docs/changes.md).
		return &usageError{err: fmt.Errorf("--through %d: give the last event acted on (1 or more), or leave --through out to acknowledge the whole batch", o.through)}
	}
	return nil
}

// runChangesAck acknowledges the consumer's batch.
func runChangesAck(ctx context.Context, o *changesOptions) error {
	return withFeed(ctx, o, func(ctx context.Context, j *feed.Job) (any, error) {
		return feed.Ack(ctx, j.DB, j.Name, o.consumer, o.batch, o.through)
	})
}

// runChangesStatus prints the feed's events and consumers.
func runChangesStatus(ctx context.Context, o *changesOptions) error {
	return withFeed(ctx, o, func(ctx context.Context, j *feed.Job) (any, error) {
		return feed.Status(ctx, j.DB, j.Name, time.Now())
	})
}

// withFeed opens the job file's change feed, calls fn and prints its
// result as one JSON object.
func withFeed(ctx context.Context, o *changesOptions, fn func(context.Context, *feed.Job) (any, error)) error {
	log, err := newLogger(o.io.ErrOut, o.g.logFormat, o.g.logLevel, o.g.quiet, idsync.NewRedactor(), "")
	if err != nil {
		return &usageError{err: err}
	}
	j, err := feed.Open(ctx, o.file, log)
	if err != nil {
		return err
	}
	defer j.Close()
	o.g.jobName = j.Name
	v, err := fn(ctx, j)
	if st := feedRefusal(err); st != "" && o.g.json {
		// Its own status word, so that serve answers 409 rather than a
		// permanent failure's 500 (docs/serve.md, "Statuses").
		code := exitCode(err)
		writeJSON(o.io, &idsync.Result{Job: j.Name, Status: st, Error: err.Error(), ExitCode: code})
		return &reportedError{code: code}
	}
	if err != nil {
		return err
	}
	writeJSON(o.io, v)
	return nil
}

// feedRefusal is the status word of a refusal the consumer resolves
// itself (docs/changes.md): "stale" for an ack of a batch no longer its
// own, "gap" for a consumer behind the pruned events; "" for any other
// error.
func feedRefusal(err error) string {
	switch {
	case errors.Is(err, feed.ErrStaleBatch):
		return "stale"
	case errors.Is(err, feed.ErrGap):
		return "gap"
	}
	return ""
}

// pruneFeed deletes, after a run of a fed job, the events every consumer
// acknowledged that are older than the job's retention (docs/changes.md,
// "Retention"). A failure is logged: the next run tries again.
func pruneFeed(ctx context.Context, job *idsync.Job, log *slog.Logger) {
	if job.Table.Changes == nil || ctx.Err() != nil {
		return
	}
	s, err := sink.OpenRead(ctx, job.Target.Conn(), log)
	if err != nil {
		log.Warn("prune the change feed", "err", err)
		return
	}
	defer s.Close()
	fd, err := s.FeedDB(ctx, &job.Table)
	if err == nil {
		var p feed.Pruned
		p, err = feed.Prune(ctx, fd, job.Table.Changes.Job, time.Now().Add(-job.Retention.Duration))
		if p.Deleted > 0 {
			log.Info("pruned the change feed", "events", p.Deleted)
		}
	}
	if err != nil {
		log.Warn("prune the change feed", "err", err)
	}
}
