package feed

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/jobfile"
	"github.com/idemsync/idemsync/sink"
)

// Job is a job file's change feed, opened: one feed per job file, named
// after it, holding the events of every resource with target.changes.
type Job struct {
	Name      string
	DB        contract.FeedDB
	Resources []string      // the resources with target.changes
	Retention time.Duration // the job's retention: how long acknowledged events are kept
	target    contract.Sink
}

// Close closes the target database.
func (j *Job) Close() error { return j.target.Close() }

// Open loads the job file at path (without its source's credentials, as
// status does) and opens its target's change feed. A job without
// target.changes, or whose fed resources write to different databases,
// is Invalid; a target not written yet is Permanent.
func Open(ctx context.Context, path string, logger *slog.Logger) (*Job, error) {
	jf, _, err := jobfile.LoadForState(path)
	if err != nil {
		return nil, err
	}
	j := &Job{Name: jf.Name}
	var conn contract.Conn
	var fed *contract.Table
	for _, r := range jf.Resources {
		if r.Job.Table.Changes == nil {
			continue
		}
		c := r.Job.Target.Conn()
		if len(j.Resources) > 0 && (c.URL != conn.URL || r.Job.Table.Schema != fed.Schema) {
			return nil, &contract.Error{Class: contract.Invalid,
				Msg: fmt.Sprintf("job %s: resources %s and %s keep their change feed in different databases or schemas; one job file has one feed", jf.Name, j.Resources[0], r.Name)}
		}
		conn, fed = c, &r.Job.Table
		j.Resources = append(j.Resources, r.Name)
		j.Retention = r.Job.Retention.Duration
	}
	if len(j.Resources) == 0 {
		return nil, &contract.Error{Class: contract.Invalid,
			Msg:  fmt.Sprintf("job %s keeps no change feed (resources: %s)", jf.Name, strings.Join(jf.Names(), ", ")),
			Hint: "set target.changes: true in the job file (docs/changes.md)"}
	}
	if j.target, err = sink.OpenRead(ctx, conn, logger); err != nil {
		return nil, err
	}
	if j.DB, err = j.target.FeedDB(ctx, fed); err != nil {
		j.target.Close()
		return nil, err
	}
	return j, nil
}

// CheckResources refuses a resource filter naming a resource without a
// feed.
func (j *Job) CheckResources(names []string) error {
	for _, n := range names {
		found := false
		for _, r := range j.Resources {
			found = found || r == n
		}
		if !found {
			return &contract.Error{Class: contract.Invalid,
				Msg: fmt.Sprintf("--resource %q: job %s has no fed resource of that name (fed: %s)", n, j.Name, strings.Join(j.Resources, ", "))}
		}
	}
	return nil
}

// CheckOps refuses an operation other than I, U and D.
func CheckOps(ops []string) error {
	for _, op := range ops {
		if op != "I" && op != "U" && op != "D" {
			return &contract.Error{Class: contract.Invalid, Msg: fmt.Sprintf("--ops: %q is not one of I, U, D", op)}
		}
	}
	return nil
}
