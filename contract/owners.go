package contract

import (
	"errors"
	"fmt"
)

// A table whose rows a job sweeps (deletes: soft or hard) has exactly one
// writer (docs/deletions.md, "One writer per swept table"): two jobs
// sweeping one table delete each other's rows on every run. Two state
// files cannot see each other, so every writer registers itself in the
// target database, when its target is opened and before any page is
// fetched; a sweeping writer meeting another writer, or any writer meeting
// a sweeping one, is refused (exit 2). A child table (target.children) is
// registered too, with its parent job as its only writer.

// ErrSharedTable marks the refusal of a writer on a table that another
// writer's deletions make its own.
var ErrSharedTable = errors.New("table written by more than one job")

// Writer is one job resource writing a table: its name in the state file
// (job, or job.resource) and the state file keeping its checkpoints. The
// pair is the writer's identity: two job files with one name and one state
// file are one job (they share its checkpoints and lock).
type Writer struct {
	Job   string
	State string // the state file's absolute path, symlinks resolved
	// Deletes is the writer's target.deletes ("" is keep).
	Deletes string
	// Since is when it registered (filled by the sink when reading).
	Since string
}

// Sweeps reports whether the writer removes or marks rows it did not see.
func (w Writer) Sweeps() bool { return SweepingDeletes(w.Deletes) }

// ChildRows is the Deletes recorded for the writer of a child table
// (target.children, docs/job-file.md "Child tables"): it replaces every
// child row of each parent it writes and removes them with their parent,
// so, like a sweeping writer, it must be the table's only writer.
const ChildRows = "child rows"

// Exclusive reports whether the writer must be its table's only writer:
// it sweeps, or the table is one of its child tables.
func (w Writer) Exclusive() bool { return w.Sweeps() || w.Deletes == ChildRows }

// Same reports whether w and o are one writer.
func (w Writer) Same(o Writer) bool { return w.Job == o.Job && w.State == o.State }

// String names the writer for messages: job NAME (state file PATH).
func (w Writer) String() string {
	return fmt.Sprintf("job %s (state file %s)", w.Job, w.State)
}

// TableClaim is a writer's registration for a table.
type TableClaim struct {
	Writer Writer
	// Check refuses as a registration would and registers nothing
	// (validate --connect); it creates nothing in the target.
	Check bool
	// TakeOver releases every other writer registered for the table and
	// registers Writer (idemsync claim): the way out for a job renamed,
	// moved to another state file, or removed.
	TakeOver bool
}

// CheckWriters returns the refusal (exit 2) of w writing t while others
// (every registered writer of t but w) are registered, or nil: a sweeping
// writer, or the writer of a child table, must be alone, and no writer may
// share a table with one. Writers with deletes: keep share a table freely.
func CheckWriters(t *Table, w Writer, others []Writer) error {
	var blocker *Writer
	for i := range others {
		if others[i].Same(w) {
			continue
		}
		if w.Exclusive() || others[i].Exclusive() {
			blocker = &others[i]
			break
		}
	}
	if blocker == nil {
		return nil
	}
	since := ""
	if blocker.Since != "" {
		since = " since " + blocker.Since
	}
	var msg string
	switch {
	case blocker.Deletes == ChildRows:
		msg = fmt.Sprintf("table %s holds the child rows of %s (target.children, registered%s): it replaces the child rows of every parent it writes, so rows %s writes there would be deleted",
			t, blocker, since, "job "+w.Job)
	case w.Deletes == ChildRows:
		msg = fmt.Sprintf("table %s is also written by %s (registered%s); job %s writes it as a child table (target.children), replacing the child rows of every parent it writes, and would remove that job's rows",
			t, blocker, since, w.Job)
	case blocker.Sweeps():
		msg = fmt.Sprintf("table %s belongs to %s, registered%s with deletes: %s: it removes every row its own source does not list, so rows %s writes there would be deleted",
			t, blocker, since, blocker.Deletes, "job "+w.Job)
	default:
		msg = fmt.Sprintf("table %s is also written by %s (registered%s); job %s has deletes: %s and would remove that job's rows as unseen",
			t, blocker, since, w.Job, w.Deletes)
	}
	return &sharedTable{&Error{Class: Invalid, Msg: msg,
		Hint: fmt.Sprintf("give each job its own target.table, or deletes: keep to every job writing %s; if job %s no longer writes it (renamed, moved to another state file, removed), hand the table over: %s",
			t, blocker.Job, ClaimCommand(""))}}
}

// ClaimCommand is the command that hands a table over to the job of file
// (with --resource when resource is not ""), for hints; JOB.yaml when the
// file is unknown.
func ClaimCommand(file string, resource ...string) string {
	if file == "" {
		file = "JOB.yaml"
	}
	cmd := "idemsync claim " + file
	for _, r := range resource {
		if r != "" {
			cmd += " --resource " + r
		}
	}
	return cmd
}

// sharedTable is the *Error of a refused writer; errors.Is finds
// ErrSharedTable in it.
type sharedTable struct{ e *Error }

func (r *sharedTable) Error() string        { return r.e.Error() }
func (r *sharedTable) Unwrap() error        { return r.e }
func (r *sharedTable) Is(target error) bool { return target == ErrSharedTable }
