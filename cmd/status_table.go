package cmd

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/idemsync/idemsync/contract"
	idsync "github.com/idemsync/idemsync/sync"
)

// writeJobTable writes one job's status as a compact two-column table,
// then the runs (--runs) and dead letters (--dead-letters) when asked for.
func writeJobTable(w io.Writer, j jobStatus) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s\t%s\n", k, v)
		}
	}
	row("job", j.Name)
	row("resource", j.Resource)
	row("status", j.Status)
	if j.Status == contract.JobNeverRun {
		row("last run", "never: this job has not run yet")
		row("state", j.lookedIn)
		_ = tw.Flush()
		return
	}
	row("lock holder", j.Holder)
	row("checkpoint", orDash(j.Checkpoint))
	row("saved mark", orDash(j.HWM))
	if j.LastFullPass != nil {
		row("full pass", "the last completed one started "+stamp(*j.LastFullPass))
	}
	if r := j.LastRun; r != nil {
		row("last run", runLine(r))
		row("counts", fmt.Sprintf("%s, %s: %d inserted, %d updated, %d unchanged, %d skipped, %d deleted",
			plural(r.Pages, "page"), plural(r.Records, "record"), r.Inserted, r.Updated, r.Unchanged, r.Skipped, r.Deleted))
		for _, name := range slices.Sorted(maps.Keys(r.Children)) { // docs/job-file.md, "Child tables"
			c := r.Children[name]
			row("  "+name, fmt.Sprintf("child rows: %d inserted, %d deleted", c.Inserted, c.Deleted))
		}
		row("last error", oneLine(r.Error, 200))
		if r.Sweep == idsync.SweepSkippedOutcome {
			row("sweep", "skipped ("+oneLine(r.SweepSkipped, 300)+"): this pass deletes nothing")
		}
		if p := r.PendingDeletes; p != nil && *p > 0 {
			row("pending", fmt.Sprintf("%s this pass did not see: the next full pass removes those it misses too (docs/deletions.md, Two passes)", plural(*p, "row")))
		}
		changes := strings.Join(j.WalkChanges, "; ")
		switch st := r.Status; {
		case r.Refused:
			row("next run", "starts a fresh full pass (the sweep of this one was refused)")
		case st == contract.RunPartial || st == contract.RunInterrupted || st == contract.RunFailed:
			if changes != "" {
				row("next run", fmt.Sprintf("refused (exit 2): the job file changed the walk of run #%d: %s (--restart starts over)", r.RunNumber, changes))
			} else {
				row("next run", fmt.Sprintf("continues run #%d from %s (--restart starts over)", r.RunNumber, r.Checkpoint))
			}
		case st == contract.RunCompleted || st == contract.RunAbandoned:
			if changes != "" {
				row("next run", "starts from the beginning: the job file changed the walk: "+changes)
			}
		}
	}
	if s := j.LastSync; s != nil && j.LastRun != nil && s.RunID != j.LastRun.RunID {
		row("last sync", runLine(s))
	}
	row("dead letters", fmt.Sprint(j.DeadLetters))
	_ = tw.Flush()
	if j.Runs != nil {
		writeRuns(w, j.Runs)
	}
	if j.Dead != nil {
		fmt.Fprintf(w, "\ndead letters (%d), newest first:\n", len(j.Dead))
		for _, d := range j.Dead {
			fmt.Fprintf(w, "  #%d run %d at %s record %d: %s\n    %s\n", d.ID, d.RunID, d.Position, d.Index, d.Reason, oneLine(d.Raw, 200))
		}
	}
	writeSchemaChanges(w, j.Schema)
}

// writeResourcesTable writes a row per resource of a job file with
// several: its status, checkpoint, last run, records and dead letters.
func writeResourcesTable(w io.Writer, jobs []jobStatus) {
	fmt.Fprintf(w, "job %s\n", jobs[0].Name)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RESOURCE\tSTATUS\tCHECKPOINT\tLAST RUN\tRECORDS\tDEAD LETTERS\tERROR")
	for _, j := range jobs {
		last, records, errText := "-", "-", "-"
		if r := j.LastRun; r != nil {
			last = runLine(r)
			records = fmt.Sprintf("%d (%d inserted, %d updated)", r.Records, r.Inserted, r.Updated)
			errText = orDash(oneLine(r.Error, 60))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", j.Resource, j.Status, orDash(j.Checkpoint), last, records, j.DeadLetters, errText)
	}
	_ = tw.Flush()
}

// anyWalkChanges reports whether a job file changed any resource's walk.
func anyWalkChanges(jobs []jobStatus) bool {
	for _, j := range jobs {
		if len(j.WalkChanges) > 0 {
			return true
		}
	}
	return false
}

// runLine describes a run in one line: "#3 (id 7) run completed, started
// 2024-05-01T02:00:00Z, took 1.25s", numbered among the job's runs.
func runLine(r *runStatus) string {
	s := fmt.Sprintf("#%d (id %d) %s %s, started %s", r.RunNumber, r.RunID, r.Kind, r.Status, stamp(r.StartedAt))
	if r.Status == contract.RunRunning {
		return s + ", running for " + durationText(r.DurationMS)
	}
	if r.FinishedAt != nil {
		s += ", took " + durationText(r.DurationMS)
	}
	return s
}

// writeRuns writes the runs table of --runs, newest first.
func writeRuns(w io.Writer, runs []runStatus) {
	fmt.Fprintln(w, "\nruns, newest first:")
	if len(runs) == 0 {
		fmt.Fprintln(w, "  none")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  RUN\tID\tKIND\tSTATUS\tSTARTED\tTOOK\tPAGES\tRECORDS\tINSERTED\tUPDATED\tUNCHANGED\tSKIPPED\tDELETED\tCHECKPOINT\tERROR")
	for _, r := range runs {
		took := "-"
		if r.FinishedAt != nil || r.Status == contract.RunRunning {
			took = durationText(r.DurationMS)
		}
		fmt.Fprintf(tw, "  %d\t%d\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\n", r.RunNumber, r.RunID, r.Kind, r.Status,
			stamp(r.StartedAt), took, r.Pages, r.Records, r.Inserted, r.Updated, r.Unchanged, r.Skipped, r.Deleted,
			r.Checkpoint, orDash(oneLine(r.Error, 60)))
	}
	_ = tw.Flush()
}

// stamp writes a time for status: RFC 3339 in UTC, to the second.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// durationText writes a run's duration to the millisecond below a minute
// and to the second above.
func durationText(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	if d >= time.Minute {
		d = d.Round(time.Second)
	}
	return d.String()
}

// plural writes "1 page", "2 pages".
func plural(n int64, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine folds s onto one line and cuts it after n bytes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		return s[:n] + "…"
	}
	return s
}
