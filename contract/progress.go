package contract

import "context"

// Progress is the progress marker a page writes in its own target
// transaction (docs/guarantees.md, "Job identity"): per job and table, a
// counter that only grows. The state records the value of the job's last
// committed page, so a target behind it was restored or rolled back.
type Progress struct {
	Job   string // the job's name
	Value int64  // the marker the page raises the job's to (0: none)
}

// Progressor is a Sink that keeps progress markers, in a table of the
// target beside the job's table (_idemsync_progress).
type Progressor interface {
	// ReadProgress returns job's marker for t: kept is false when the
	// target has no marker table (written by an earlier version, or the
	// table was dropped), and value 0 when it holds none for job and t.
	ReadProgress(ctx context.Context, t *Table, job string) (value int64, kept bool, err error)
	// AdoptProgress raises job's marker for t to value in a transaction
	// of its own.
	AdoptProgress(ctx context.Context, t *Table, job string, value int64) error
}
