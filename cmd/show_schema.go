package cmd

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/jobfile"
)

// shownSchemaChanges reads, for each resource, the schema changes its
// pages made (newest first) from the state store, as status
// --schema-changes does: show lists them after the rows
// (docs/operations.md, "show"). Show never creates a state file: with none
// yet, every resource has none.
func shownSchemaChanges(ctx context.Context, g *globalOpts, ios *IOStreams, rs []jobfile.Resource) ([][]contract.SchemaChange, error) {
	out := make([][]contract.SchemaChange, len(rs))
	path := g.statePath(rs[0].Job)
	if stateMissing(path) {
		return out, nil
	}
	log, err := newLogger(ios.ErrOut, g.logFormat, g.logLevel, g.quiet, rs[0].Job.Secrets, g.jobName)
	if err != nil {
		return nil, &usageError{err: err}
	}
	store, err := openStore(ctx, path, log)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	for i, r := range rs {
		if out[i], err = store.SchemaChanges(ctx, r.Job.Name, 0); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// writeSchemaChanges lists a job's schema changes, newest first (status
// --schema-changes and show); nothing when changes is nil.
func writeSchemaChanges(w io.Writer, changes []contract.SchemaChange) {
	if changes == nil {
		return
	}
	fmt.Fprintf(w, "\nschema changes (%d), newest first:\n", len(changes))
	for _, c := range changes {
		from := c.From
		if from == "" {
			from = "(new)"
		}
		fmt.Fprintf(w, "  #%d run %d at %s: %s.%s %s → %s: %s\n", c.ID, c.RunID, c.At.Format(time.RFC3339), c.Table, c.Column, from, c.To, c.Reason)
	}
}
