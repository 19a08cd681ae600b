package sync

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/tidwall/gjson"
)

// target.deletes values (SPEC §10).
const (
	DeletesKeep = "keep" // rows a full pass did not see stay as they are (the default)
	DeletesSoft = "soft" // they get ColDeletedAt set; a key that reappears clears it
	DeletesHard = "hard" // they are deleted
)

// DefaultMaxDeleteRatio is target.max_delete_ratio's default: a sweep that
// would remove more than half of the table's rows fails its run.
const DefaultMaxDeleteRatio = 0.5

// ColDeletedAt is the bookkeeping column of soft deletions: when the row
// was found deleted (NULL while the row is live). Only tables of jobs with
// deletes: soft have it.
const ColDeletedAt = "_idemsync_deleted_at"

// Tombstone is target.tombstone: a record whose Field holds Value is
// deleted (hard) or marked (soft) in its page's own write.
type Tombstone struct {
	Field string `yaml:"field" json:"field" jsonschema:"required"`
	// Value is compared with the field's JSON value: a boolean, a number
	// or a string, as written in the job file.
	Value any `yaml:"value" json:"value" jsonschema:"required"`
}

// Matches reports whether rec's Field holds Value (a bool matches a JSON
// boolean, a number a JSON number of equal value, a string a JSON string
// of equal text).
func (tb *Tombstone) Matches(rec gjson.Result) bool {
	if tb == nil {
		return false
	}
	v := rec.Get(tb.Field)
	switch want := tb.Value.(type) {
	case bool:
		return v.Type == gjson.True && want || v.Type == gjson.False && !want
	case string:
		return v.Type == gjson.String && v.Str == want
	case int:
		return v.Type == gjson.Number && v.Num == float64(want)
	case int64:
		return v.Type == gjson.Number && v.Num == float64(want)
	case float64:
		return v.Type == gjson.Number && v.Num == want
	case nil:
		return v.Type == gjson.Null && v.Exists()
	}
	return false
}

// ErrSweepRefused marks a sweep that would have removed more than
// target.max_delete_ratio of the table's rows: its run fails (exit 1) and
// is dropped, and the next run starts a fresh full pass.
var ErrSweepRefused = errors.New("sweep refused")

// SweepRequest is what a Sweeper needs to remove the rows a full pass did
// not see.
type SweepRequest struct {
	// Mode is DeletesHard or DeletesSoft.
	Mode string
	// Keys calls fn with every key the pass saw, as KeyForms returned them
	// (a key may come more than once); it stops at fn's first error.
	Keys func(fn func(key string) error) error
	// MaxRatio is target.max_delete_ratio: a sweep that would remove more
	// than this share of the table's live rows is refused.
	MaxRatio float64
	// Allow lets this sweep pass MaxRatio (--allow-mass-delete).
	Allow bool
	// At is the time soft-deleted rows are marked with.
	At time.Time
	// Failpoint, when set, is called at each step of the sweep with its
	// name ("sweep-loaded": the keys are in, nothing removed yet;
	// "sweep-applied": removed, not committed).
	Failpoint func(step string)
}

// SweepResult is what a sweep did.
type SweepResult struct {
	Deleted int64 // rows deleted (hard) or newly marked (soft)
	Live    int64 // live rows of the table before the sweep
}

// Sweeper is a Sink that can record the keys of a full pass and remove
// the rows it did not see (SPEC §10). Both sinks implement it.
type Sweeper interface {
	// KeyForms returns, for each row, its key in the form the table
	// stores it, encoded as a string Sweep can match against stored rows
	// (equal for keys the table's unique key holds equal).
	KeyForms(ctx context.Context, t *Table, rows []Row) ([]string, error)
	// Sweep removes (hard) or marks (soft, keeping an existing mark) in
	// one transaction every row of t whose key is not among req.Keys. It
	// is idempotent: run again after a crash it does the same to the same
	// rows. A sweep over req.MaxRatio that req.Allow does not let pass
	// changes nothing and returns an *Error (ExitPermanent) wrapping
	// ErrSweepRefused that names the numbers; an error of req.Keys changes
	// nothing and is returned wrapped.
	Sweep(ctx context.Context, t *Table, req SweepRequest) (SweepResult, error)
}

// CheckSweepRatio returns the refusal of a sweep that would remove n of
// live rows when that share exceeds maxRatio and allow is false, else nil.
// Sweepers call it in the sweep's transaction and roll back on a refusal,
// so a refused sweep removes nothing.
func CheckSweepRatio(t *Table, n, live int64, maxRatio float64, allow bool) error {
	if allow || n == 0 || live == 0 || float64(n) <= maxRatio*float64(live) {
		return nil
	}
	return &refusal{&Error{Code: ExitPermanent,
		Msg: fmt.Sprintf("table %s: sweep would delete %d of %d rows (%s) > max_delete_ratio %s; run with --allow-mass-delete to allow it once",
			t, n, live, percent(n, live), strconv.FormatFloat(maxRatio, 'g', -1, 64)),
		Hint: "if the source really lost those records, run once with --allow-mass-delete (or raise target.max_delete_ratio); if it glitched, the next run starts a fresh full pass"}}
}

// refusal is the *Error of a refused sweep; errors.Is finds
// ErrSweepRefused in it.
type refusal struct{ e *Error }

func (r *refusal) Error() string        { return r.e.Error() }
func (r *refusal) Unwrap() error        { return r.e }
func (r *refusal) Is(target error) bool { return target == ErrSweepRefused }

// percent renders n/of as a whole percentage, never rounding a partial
// share to 0% or 100%.
func percent(n, of int64) string {
	p := n * 100 / of
	switch {
	case p == 0 && n > 0:
		return "<1%"
	case p == 100 && n < of:
		return ">99%"
	}
	return strconv.FormatInt(p, 10) + "%"
}
