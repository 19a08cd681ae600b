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

// sweepingDeletes reports whether a target.deletes value removes or marks
// the rows a full pass did not see (soft or hard).
func sweepingDeletes(d string) bool { return d == DeletesSoft || d == DeletesHard }

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
	// than this share of the live rows the table held before the pass is
	// refused (docs/deletions.md).
	MaxRatio float64
	// LiveBefore is the live rows the table held when the pass started
	// (Sweeper.LiveRows), -1 when unknown (a pass begun by an older
	// idemsync): then Base estimates it.
	LiveBefore int64
	// WrittenBefore, when not zero (a pass after a refused sweep), limits
	// what counts against MaxRatio to the rows last written before it:
	// the rows the refused passes wrote are the glitch's own and may go
	// freely, the rows from before it are measured against LiveBefore.
	WrittenBefore time.Time
	// Prior calls fn with the keys of the previous full pass that swept
	// with proof and of every full pass since (sightings); nil when there
	// is no such pass. Only the rows missed by this pass and by Prior,
	// and not written since PriorStart, are removed; the other rows this
	// pass missed stay, pending (docs/deletions.md, "Two passes").
	Prior      func(fn func(key string) error) error
	PriorStart time.Time
	// PriorLiveBefore is the prior pass's LiveBefore (-1 when unknown):
	// the base is the fewer of the two passes' live rows.
	PriorLiveBefore int64
	// Inserted is how many rows the pass inserted, for Base's estimate.
	Inserted int64
	// Allow lets this sweep pass MaxRatio (--allow-mass-delete).
	Allow bool
	// AllowCommand is the command that lets this sweep pass, for the
	// refusal's message ("" names the flag only).
	AllowCommand string
	// At is the time soft-deleted rows are marked with.
	At time.Time
	// Failpoint, when set, is called at each step of the sweep with its
	// name ("sweep-loaded": the keys are in, nothing removed yet;
	// "sweep-applied": removed, not committed).
	Failpoint func(step string)
}

// Base is the share's denominator: the live rows the table held before
// the pass, or, when that is unknown, live (the live rows counted at the
// sweep) less the rows the pass inserted; the prior pass's live rows when
// they are fewer (a removal is decided over both passes: a glitch that
// wrote its own rows between them does not dilute the share).
func (r SweepRequest) Base(live int64) int64 {
	base := max(0, live-r.Inserted)
	if r.LiveBefore >= 0 {
		base = r.LiveBefore
	}
	if r.Prior != nil && r.PriorLiveBefore >= 0 && r.PriorLiveBefore < base {
		base = r.PriorLiveBefore
	}
	return base
}

// SweepResult is what a sweep did.
type SweepResult struct {
	Deleted int64 // rows deleted (hard) or newly marked (soft)
	Pending int64 // live rows the pass missed but kept (SweepRequest.Prior)
	Live    int64 // live rows of the table before the sweep
	Base    int64 // live rows before the pass (SweepRequest.Base)
}

// Sweeper is a Sink that can record the keys of a full pass and remove
// the rows it did not see (SPEC §10). Both sinks implement it.
type Sweeper interface {
	// KeyForms returns, for each row, its key in the form the table
	// stores it, encoded as a string Sweep can match against stored rows
	// (equal for keys the table's unique key holds equal).
	KeyForms(ctx context.Context, t *Table, rows []Row) ([]string, error)
	// Sweep removes (hard) or marks (soft, keeping an existing mark) in
	// one transaction every live row of t whose key is not among req.Keys
	// nor req.Prior's and that was not written since req.PriorStart
	// (nothing when req.Prior is nil), and counts the other live rows not
	// among req.Keys as pending. It
	// is idempotent: run again after a crash it does the same to the same
	// rows. A sweep over req.MaxRatio that req.Allow does not let pass
	// changes nothing and returns an *Error (ExitPermanent) wrapping
	// ErrSweepRefused that names the numbers; an error of req.Keys changes
	// nothing and is returned wrapped.
	Sweep(ctx context.Context, t *Table, req SweepRequest) (SweepResult, error)
	// LiveRows counts t's live rows (on a soft table, those not marked
	// deleted); 0 when t does not exist. A full pass that sweeps counts
	// them when it starts: max_delete_ratio's base.
	LiveRows(ctx context.Context, t *Table) (int64, error)
}

// CheckSweepRatio returns the refusal of a sweep that would remove n rows
// when that exceeds req.MaxRatio of req.Base(live) (live: the live rows
// counted at the sweep) and req.Allow is false, else nil. A ratio of 1 or
// more never refuses. Sweepers call it in the sweep's transaction and roll
// back on a refusal, so a refused sweep removes nothing.
func CheckSweepRatio(t *Table, n, live int64, req SweepRequest) error {
	base := req.Base(live)
	if req.Allow || n == 0 || req.MaxRatio >= 1 || float64(n) <= req.MaxRatio*float64(base) {
		return nil
	}
	allow := req.AllowCommand
	if allow == "" {
		allow = "run with --allow-mass-delete"
	}
	share := ">100%"
	if n <= base {
		share = percent(n, base)
	}
	return &refusal{&Error{Code: ExitPermanent,
		Msg: fmt.Sprintf("table %s: sweep would delete %d of the %d rows the table held before the pass (%s) > max_delete_ratio %s; to allow it once: %s",
			t, n, base, share, strconv.FormatFloat(req.MaxRatio, 'g', -1, 64), allow),
		Hint: "if the source really lost those records, allow it once with the command above (or raise target.max_delete_ratio); if it glitched, the next run starts a fresh full pass"}}
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
