package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemsync/idemsync/checkpoint"
	idsync "github.com/idemsync/idemsync/sync"
)

// jobStatus is one job in status --json (SPEC §2).
type jobStatus struct {
	Name        string              `json:"name"`
	Status      string              `json:"status"`
	Checkpoint  string              `json:"checkpoint"`
	HWM         string              `json:"hwm"`
	LastRun     *idsync.Result      `json:"last_run"`
	DeadLetters int64               `json:"dead_letters"`
	Holder      string              `json:"lock_holder,omitempty"`
	Runs        []idsync.Result     `json:"runs,omitempty"`
	Dead        []idsync.DeadLetter `json:"dead_letter_records,omitempty"`
}

type statusOpts struct {
	runs int
	dead bool
}

func newStatusCmd(g *globalOpts, ios *IOStreams) *cobra.Command {
	o := &statusOpts{}
	c := &cobra.Command{
		Use:   "status [JOB.yaml]",
		Short: "Show checkpoints, marks, last runs, errors and dead letters",
		Long: `Show the job's checkpoint, saved high-water mark, last run, last error and
dead-letter count. Without a job file, every job in the state file (--state,
$IDEMSYNC_STATE, or .idemsync/state.db in the current folder).`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 1 {
				return &usageError{err: fmt.Errorf("status takes at most one job file")}
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			return status(c.Context(), g, ios, args, o)
		},
	}
	c.Flags().IntVar(&o.runs, "runs", 0, "also list the last N runs of each job")
	c.Flags().BoolVar(&o.dead, "dead-letters", false, "also list the dead-lettered records (raw JSON and reason)")
	return c
}

func status(ctx context.Context, g *globalOpts, ios *IOStreams, args []string, o *statusOpts) error {
	var job *idsync.Job
	red := idsync.NewRedactor()
	if len(args) == 1 {
		var err error
		if job, err = idsync.LoadFile(args[0]); err != nil {
			return err
		}
		red = job.Secrets
	}
	log, err := newLogger(ios.ErrOut, g.logFormat, g.logLevel, g.quiet, red)
	if err != nil {
		return &usageError{err: err}
	}
	path := g.statePath(job)
	var out []jobStatus
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		if job != nil {
			out = append(out, jobStatus{Name: job.Name, Status: idsync.JobNeverRun})
		}
		return printStatus(ios, g, out, path)
	}
	store, err := checkpoint.Open(ctx, path, log)
	if err != nil {
		return err
	}
	defer store.Close()
	var states []idsync.JobState
	if job != nil {
		js, err := store.Job(ctx, job.Name)
		if err != nil {
			return err
		}
		states = []idsync.JobState{*js}
	} else if states, err = store.Jobs(ctx); err != nil {
		return err
	}
	for i := range states {
		js := &states[i]
		style := ""
		if job != nil {
			style = job.Pagination.Style
		}
		s := jobStatus{Name: js.Name, Status: idsync.JobStatus(js), HWM: js.HWM, DeadLetters: js.DeadLetters, Holder: js.Holder}
		if js.LastRun != nil {
			r := idsync.RunResult(js.LastRun, style, js.HWM, red)
			if r.Status == idsync.RunRunning && js.Holder == "" {
				r.Status = idsync.RunInterrupted // its process is gone: killed
			}
			s.LastRun, s.Checkpoint = &r, r.Checkpoint
		}
		if o.runs > 0 {
			runs, err := store.Runs(ctx, js.Name, o.runs)
			if err != nil {
				return err
			}
			for j := range runs {
				r := idsync.RunResult(&runs[j], style, js.HWM, red)
				if r.Status == idsync.RunRunning && (js.Holder == "" || j > 0) {
					r.Status = idsync.RunInterrupted // its process is gone: killed
				}
				s.Runs = append(s.Runs, r)
			}
		}
		if o.dead {
			if s.Dead, err = store.DeadLetters(ctx, js.Name, 0); err != nil {
				return err
			}
			if s.Dead == nil {
				s.Dead = []idsync.DeadLetter{}
			}
		}
		out = append(out, s)
	}
	return printStatus(ios, g, out, path)
}

func printStatus(ios *IOStreams, g *globalOpts, jobs []jobStatus, path string) error {
	if g.json {
		if jobs == nil {
			jobs = []jobStatus{}
		}
		writeJSON(ios, map[string]any{"jobs": jobs})
		return nil
	}
	if len(jobs) == 0 {
		fmt.Fprintf(ios.Out, "no jobs in %s\n", path)
		return nil
	}
	for i, j := range jobs {
		if i > 0 {
			fmt.Fprintln(ios.Out)
		}
		writeJobTable(ios.Out, j)
	}
	return nil
}

func writeJobTable(w io.Writer, j jobStatus) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s\t%s\n", k, v)
		}
	}
	row("job", j.Name)
	row("status", j.Status)
	if j.Status == idsync.JobNeverRun {
		row("", "this job has never run")
		tw.Flush()
		return
	}
	row("lock holder", j.Holder)
	row("checkpoint", j.Checkpoint)
	row("saved mark", orDash(j.HWM))
	if r := j.LastRun; r != nil {
		row("last run", fmt.Sprintf("#%d %s %s in %s", r.RunID, r.Kind, r.Status, (time.Duration(r.DurationMS)*time.Millisecond).Round(time.Millisecond)))
		row("counts", fmt.Sprintf("%d pages, %d records: %d inserted, %d updated, %d unchanged, %d skipped", r.Pages, r.Records, r.Inserted, r.Updated, r.Unchanged, r.Skipped))
		row("last error", r.Error)
	}
	row("dead letters", fmt.Sprint(j.DeadLetters))
	tw.Flush()
	if len(j.Runs) > 0 {
		fmt.Fprintln(w, "\nruns:")
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  ID\tKIND\tSTATUS\tPAGES\tRECORDS\tINSERTED\tUPDATED\tUNCHANGED\tSKIPPED\tDURATION\tERROR")
		for _, r := range j.Runs {
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\n", r.RunID, r.Kind, r.Status, r.Pages, r.Records,
				r.Inserted, r.Updated, r.Unchanged, r.Skipped, (time.Duration(r.DurationMS) * time.Millisecond).Round(time.Millisecond), oneLine(r.Error, 60))
		}
		tw.Flush()
	}
	if j.Dead != nil {
		fmt.Fprintf(w, "\ndead letters (%d):\n", len(j.Dead))
		for _, d := range j.Dead {
			fmt.Fprintf(w, "  #%d run %d at %s record %d: %s\n    %s\n", d.ID, d.RunID, d.Position, d.Index, d.Reason, oneLine(d.Raw, 200))
		}
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
