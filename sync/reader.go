package sync

import "context"

// RowReader reads a target table back, for people looking at what a job
// wrote (idemsync show). The sinks implement it next to Sink.
type RowReader interface {
	// LatestRows returns the names of t's columns in table order (the
	// content hash column left out) and up to limit rows, the most
	// recently written first (by ColSyncedAt, descending). Every value is
	// its column's text form, nil for SQL NULL. A missing table is an
	// *Error (exit 1) naming it.
	LatestRows(ctx context.Context, t *Table, limit int) (columns []string, rows [][]*string, err error)
}
