package cmd

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/idemsync/idemsync/jobfile"

	"github.com/spf13/cobra"

	"github.com/idemsync/idemsync/checkpoint/pgstate"
	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/feed"
	idsync "github.com/idemsync/idemsync/sync"
)

// pruneOptions are the parsed command line of prune.
type pruneOptions struct {
	io      *IOStreams
	g       *globalOpts
	args    []string // the job file, or none
	keep    string
	keepSet bool // --keep given: it bounds the change feed's events too
}

func newCmdPrune(f *Factory, runF func(*pruneOptions) error) *cobra.Command {
	o := &pruneOptions{io: f.IOStreams, g: f.globals}
	c := &cobra.Command{
		Use:   "prune [JOB.yaml] [--keep 30d]",
		Short: "Drop runs and page rows older than the retention from the state file",
		Long: `Drop the page rows and runs that finished more than --keep ago (default
30d; Go durations plus d for days). Never dropped: a job's latest run, its
latest completed run, an unfinished run and its pages, a run with dead
letters (its page rows go), the saved marks, the dead letters. Without a
job file, every job of the state file (--state, $IDEMSYNC_STATE, or
.idemsync/state.db). When at least a quarter of the file is free space
afterwards, the file is rewritten (VACUUM) to give the space back to the
file system, and prune says how much it freed (or that the file had no
free space to give back). run and resume prune their job at their
retention after every run, without rewriting the file.

With a job file that keeps a change feed (target.changes), prune also
deletes the feed's events that every consumer acknowledged and that are
older than the job's retention (or --keep when given), and says how many
went and how far the feed is pruned; a consumer behind that point is then
in a gap (docs/changes.md, "Retention and gaps").`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 1 {
				return &usageError{err: fmt.Errorf("prune takes at most one job file")}
			}
			return nil
		},
		ValidArgsFunction: jobFileArgs,
		RunE: func(c *cobra.Command, args []string) error {
			o.args = args
			o.keepSet = c.Flags().Changed("keep")
			if runF != nil {
				return runF(o)
			}
			return prune(c.Context(), o.g, o.io, o.args, o)
		},
	}
	c.Flags().StringVar(&o.keep, "keep", "30d", "keep runs that finished less than this long ago (e.g. 30d, 72h)")
	return c
}

// parseKeep reads a Go duration or a number of days ("30d").
func parseKeep(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(strings.TrimSpace(s), "d"); ok {
		n, err := strconv.Atoi(d)
		// Bounded: days past what a Duration holds wrapped round (213504d
		// was 25 minutes, and kept that little).
		if err == nil && n >= 0 && n <= int(math.MaxInt64/int64(24*time.Hour)) {
			return time.Duration(n) * 24 * time.Hour, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("--keep %q: want a duration such as 30d or 72h", s)
	}
	return d, nil
}

func prune(ctx context.Context, g *globalOpts, ios *IOStreams, args []string, o *pruneOptions) error {
	keep, err := parseKeep(o.keep)
	if err != nil {
		return &usageError{err: err}
	}
	var jf *jobfile.File
	var job *idsync.Job
	red := idsync.NewRedactor()
	if len(args) == 1 {
		if jf, _, err = jobfile.LoadForState(args[0]); err != nil { // no credentials needed
			return err
		}
		job, g.jobName = jf.Resources[0].Job, jf.Name
		for _, r := range jf.Resources {
			red.Merge(r.Job.Secrets)
		}
	}
	log, err := newLogger(ios.ErrOut, g.logFormat, g.logLevel, g.quiet, red, g.jobName)
	if err != nil {
		return &usageError{err: err}
	}
	path := g.statePath(job)
	if stateMissing(path) {
		return printPrune(ios, g, nil, nil, 0, 0, path) // nothing to prune; never create the file
	}
	var fed *feed.Pruned
	if jf != nil && keepsFeed(jf) {
		if fed, err = pruneJobFeed(ctx, args[0], keep, o.keepSet, log); err != nil {
			return err
		}
	}
	store, err := openStore(ctx, path, log)
	if err != nil {
		return err
	}
	defer store.Close()
	all, err := store.JobNames(ctx)
	if err != nil {
		return err
	}
	names := all
	before := store.Size(ctx)
	var out []contract.PruneStats
	if jf != nil {
		names = nil
		for _, r := range jf.Resources {
			names = append(names, r.Job.Name)
		}
		if out, err = forgetRemoved(ctx, store, jf, all); err != nil {
			return err
		}
	}
	for _, n := range names {
		st, err := store.Prune(ctx, n, keep)
		if err != nil {
			return err
		}
		out = append(out, st)
	}
	if err := store.Compact(ctx); err != nil {
		return err
	}
	return printPrune(ios, g, out, fed, before, store.Size(ctx), path)
}

// keepsFeed reports whether a resource of jf keeps a change feed.
func keepsFeed(jf *jobfile.File) bool {
	for _, r := range jf.Resources {
		if r.Job.Table.Changes != nil {
			return true
		}
	}
	return false
}

// pruneJobFeed prunes the change feed of the job file at path: the events
// every consumer acknowledged that are older than the job's retention, or
// than keep when --keep was given (docs/changes.md, "Retention and gaps").
func pruneJobFeed(ctx context.Context, path string, keep time.Duration, keepSet bool, log *slog.Logger) (*feed.Pruned, error) {
	j, err := feed.Open(ctx, path, log)
	if err != nil {
		return nil, err
	}
	defer j.Close()
	if !keepSet {
		keep = j.Retention
	}
	p, err := feed.Prune(ctx, j.DB, j.Name, time.Now().Add(-keep))
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// forgetRemoved removes the state of the resources of jf's job that the file no
// longer lists (removing a resource leaves its state until prune:
// docs/job-file.md, "Several resources in one file"), under the job file's
// lock. Each is reported with all its runs pruned and none kept.
func forgetRemoved(ctx context.Context, store contract.Store, jf *jobfile.File, names []string) ([]contract.PruneStats, error) {
	var gone []string
	for _, n := range names {
		job, res, ok := strings.Cut(n, jobfile.ResourceSep)
		if ok && job == jf.Name && jf.Resource(res) == nil {
			gone = append(gone, n)
		}
	}
	if len(gone) == 0 {
		return nil, nil
	}
	unlock, err := store.Lock(ctx, jf.Name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var out []contract.PruneStats
	for _, n := range gone {
		runs, err := store.Forget(ctx, n)
		if err != nil {
			return nil, err
		}
		out = append(out, contract.PruneStats{Job: n, Runs: runs})
	}
	return out, nil
}

// printPrune prints what prune did: per job, the runs and page rows it
// deleted; the change feed's events (fed is nil for a job without one);
// the state file's size.
func printPrune(ios *IOStreams, g *globalOpts, jobs []contract.PruneStats, fed *feed.Pruned, before, after int64, path string) error {
	path = stateName(path)
	if g.json {
		if jobs == nil {
			jobs = []contract.PruneStats{}
		}
		out := map[string]any{"jobs": jobs, "state": path, "bytes_before": before, "bytes_after": after,
			"bytes_freed": max(before-after, 0), "exit_code": 0}
		if fed != nil {
			out["feed"] = fed
		}
		writeJSON(ios, out)
		return nil
	}
	for _, j := range jobs {
		fmt.Fprintf(ios.Out, "%s: deleted %s and %s; %s kept\n", j.Job, plural(j.Runs, "run"), plural(j.Pages, "page row"), plural(j.Kept, "run"))
	}
	if fed != nil {
		fmt.Fprintf(ios.Out, "change feed %s: deleted %s; pruned through event %d\n", fed.Job, plural(fed.Deleted, "event"), fed.PrunedThrough)
	}
	if jobs == nil {
		fmt.Fprintf(ios.Out, "no jobs in %s\n", stateName(path))
		return nil
	}
	if pgstate.IsURL(path) {
		// Its tables are never rewritten: autovacuum reclaims the space
		// (docs/operations.md, "State in PostgreSQL").
		fmt.Fprintf(ios.Out, "state %s: tables of %d KiB before, %d KiB after (autovacuum reclaims the space)\n", path, before>>10, after>>10)
		return nil
	}
	freed := "nothing freed: the file had no free space"
	if before > after {
		freed = fmt.Sprintf("freed %d KiB", (before-after)>>10)
	}
	fmt.Fprintf(ios.Out, "state file %s: %d KiB before, %d KiB after (%s)\n", path, before>>10, after>>10, freed)
	return nil
}
