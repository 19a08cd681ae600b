package contract

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// target.deletes values (docs/deletions.md).
const (
	DeletesKeep = "keep" // rows a full pass did not see stay as they are (the default)
	DeletesSoft = "soft" // they get ColDeletedAt set; a key that reappears clears it
	DeletesHard = "hard" // they are deleted
)

// SweepingDeletes reports whether a target.deletes value removes or marks
// the rows a full pass did not see (soft or hard).
func SweepingDeletes(d string) bool { return d == DeletesSoft || d == DeletesHard }

// ColDeletedAt is the bookkeeping column of soft deletions: when the row
// was found deleted (NULL while the row is live). Only tables of jobs with
// deletes: soft have it.
const ColDeletedAt = "_idemsync_deleted_at"

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
	// SeenLive, when not 0, is how many distinct keys Keys holds, each the
	// key of a row the pass left live (no tombstone of the pass removed or
	// marked one). A sweeper whose keys compare exactly as their encoded
	// forms may then count the table's live rows instead of loading Keys:
	// as many as SeenLive means no live row was missed (docs/deletions.md,
	// "The sweep"). 0 says nothing; a wrong value can only make a sweep
	// remove less.
	SeenLive int64
	// LiveTally, when not 0, is the table's live rows at the sweep as the
	// pass tallied them: those counted when it started (LiveBefore) plus
	// the rows it inserted, exact for a pass that one invocation ran from
	// its start and whose writes made no row live otherwise (no soft row
	// unmarked) nor removed one. Equal to SeenLive, it stands for the
	// count of live rows (docs/deletions.md, "An unchanged re-sync
	// counts"). A tally too high never equals a true SeenLive below the
	// live rows; one too low can only make a sweep remove less.
	LiveTally int64
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
	// PriorPending is the live rows the prior pass missed and kept (its
	// pending rows; -1 when unknown): see PriorUntrue.
	PriorPending int64
	// Inserted is how many rows the pass inserted, for Base's estimate.
	Inserted int64
	// Allow lets this sweep pass MaxRatio (--allow-mass-delete).
	Allow bool
	// AllowCommand is the command that lets this sweep pass, for the
	// refusal's message ("" names the flag only).
	AllowCommand string
	// At is the time soft-deleted rows are marked with.
	At time.Time
	// Hold, when set, is called in the sweep's transaction just before a
	// sweep that loaded the keys commits, with that transaction (nil from
	// a sink that cannot fence); its error rolls the sweep back and is
	// returned: a holder whose lease was lost or taken over while its
	// sweep ran removes nothing (docs/deletions.md, "A pass that changes
	// hands").
	Hold func(ctx context.Context, tx PageTx) error
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

// PriorUntrue tells, from the live rows this pass missed (missed) and
// those of them it would remove (missed by the prior pass too:
// removable), whether the two passes' misses were a picture of the
// source. Two passes that miss a live record for two different reasons
// would remove it: a pass served under other keys (a glitch) misses every
// live row, and a pass shifted between its invocations misses one, in
// either order. So:
//   - listed is how many of the rows the prior pass missed and kept are no
//     longer missed (this pass, or a pass since, listed them); when those
//     outnumber the removable ones, the prior pass was no picture;
//   - mass is how many rows this pass is the first to miss, reported when
//     they exceed MaxRatio of base (the live rows before the two passes):
//     then this pass is no picture, as a sweep that removed them would be
//     refused.
//
// Either way (untrue) the sweep removes nothing and leaves every row it
// missed pending, and the next pass pairs with this one
// (docs/deletions.md, "Two passes").
func (r SweepRequest) PriorUntrue(missed, removable, base int64) (listed, mass int64, untrue bool) {
	if removable == 0 {
		return 0, 0, false
	}
	if r.PriorPending >= 0 {
		listed = max(0, r.PriorPending-removable)
	}
	if fresh := missed - removable; r.MaxRatio < 1 && float64(fresh) > r.MaxRatio*float64(base) {
		mass = fresh
	}
	return listed, mass, listed > removable || mass > 0
}

// SweepResult is what a sweep did.
type SweepResult struct {
	Deleted int64 // rows deleted (hard) or newly marked (soft)
	Pending int64 // live rows the pass missed but kept (SweepRequest.Prior)
	// Live is the live rows of the table before the sweep; 0 (not
	// counted) when the pass missed no live row, which also leaves Base 0.
	Live int64 // live rows of the table before the sweep
	Base int64 // live rows before the pass (SweepRequest.Base)
	// PriorListed, when the sweep removed nothing because the two
	// passes' misses were untrue (SweepRequest.PriorUntrue), is how many
	// of the prior pass's were listed since, and MassMissed how many this
	// pass was the first to miss when those exceed the ratio; Untrue
	// holds the rows it would have removed.
	PriorListed, MassMissed, Untrue int64
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
	return &refusal{&Error{Class: Permanent,
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

// KeptRows is the error of a sweep or a page's tombstones (what) whose
// statement deleted, or with soft marked, fewer rows of t than it
// was to: kept of them are still in the table, live. A trigger (BEFORE
// DELETE, or BEFORE UPDATE on a soft table, returning NULL; on SQLite
// RAISE(IGNORE)), a rule or a row security policy skipped them, and the
// table holds rows the source no longer lists; the caller's transaction
// rolls back, so nothing is removed (docs/deletions.md, "A row the table
// keeps").
func KeptRows(t *Table, what string, soft bool, kept int64) error {
	verb, stmt, done := "delete", "DELETE", "deleted"
	if soft {
		verb, stmt, done = "mark", "UPDATE", "marked"
	}
	rows := "1 row the %s was to %s is"
	if kept != 1 {
		rows = strconv.FormatInt(kept, 10) + " rows the %s was to %s are"
	}
	return &Error{Class: Permanent,
		Msg: fmt.Sprintf("table %s: "+rows+" still in the table, live (a trigger, rule or row security policy skipped its %s); nothing was %s",
			t, what, verb, stmt, done),
		Hint: "a row the source no longer lists stays in the table: let the trigger return OLD (SQLite: no RAISE(IGNORE)), or drop it; the next run tries again"}
}
