package sync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/internal/failpoint"
	"github.com/idemsync/idemsync/sync/paging"
)

// A full pass (docs/deletions.md, "Full passes") is a run of kind run that
// reads the whole source: every run of a job that always starts from its first
// page, and a run of an incremental, hwm or continue: true job that run --full,
// incremental.full_every or a refused sweep asked for. It is fixed when the run
// starts (RunInfo.Full). When it completed every page, the rows whose key it
// did not see are swept (deletes: soft or hard) before the run is marked
// completed.

// incompleteKeys is why a pass with a page committed without its keys
// proves nothing: its set of seen keys must not decide a deletion.
const incompleteKeys = "some of the pass's pages were committed without their keys (deletes was turned on during the run): its set of seen keys is incomplete"

// fullPass reports whether a new run started with o is a full pass, and
// why (for the log).
func (e *Engine) fullPass(o Options, js *contract.JobState) (bool, string) {
	job := e.Job
	if o.Kind != contract.KindRun {
		return false, ""
	}
	// A child walking only the parents changed since its last run
	// (parent_rows: changed) sees part of its table, as an incremental
	// run does.
	changedParents := job.Parent != nil && job.Parent.Rows != ParentRowsAll
	partial := job.Incremental != nil || paging.Of(job.Pagination.Style).Traits().KeepsMark || job.Pagination.Continue || changedParents
	switch {
	case !partial:
		return true, ""
	case o.Full:
		return true, "run --full"
	case js.FullDue:
		return true, "a full pass is due: the last full pass's sweep was refused, or a replay found the target table empty or missing"
	}
	every := e.fullEvery()
	if every <= 0 {
		return false, ""
	}
	if js.FullPassAt.IsZero() {
		return true, "full_every: no full pass completed yet"
	}
	if since := time.Since(js.FullPassAt); since > every {
		return true, fmt.Sprintf("full_every: the last full pass started %s ago", since.Round(time.Second))
	}
	return false, ""
}

// fullEvery is incremental.full_every (0 when unset).
func (e *Engine) fullEvery() time.Duration {
	if inc := e.Job.Incremental; inc != nil {
		return inc.FullEvery.Duration
	}
	return 0
}

// sweeps reports whether the run ends with a sweep: a full pass of a job
// with deletes: soft or hard.
func (e *Engine) sweeps(rs *runState) bool {
	return rs.info.Full && rs.info.Kind == contract.KindRun && e.Job.sweepsDeletes()
}

// sweepsDeletes reports whether the job's full passes sweep: deletes is
// soft or hard.
func (j *Job) sweepsDeletes() bool {
	return contract.SweepingDeletes(j.Target.Deletes)
}

// liveBefore counts the live rows of the table when a full pass that
// sweeps starts: max_delete_ratio's base (docs/deletions.md); -1 for
// any other run.
func (e *Engine) liveBefore(ctx context.Context, o Options, full bool, sink contract.Sink) (int64, error) {
	if !full || o.Kind != contract.KindRun || !e.Job.sweepsDeletes() {
		return -1, nil
	}
	return sink.LiveRows(ctx, &e.Job.Table)
}

// afterRefusal makes a full pass that follows a refused sweep keep the
// refused chain's measure (docs/deletions.md, "A glitch that outlasts a
// run"): the rows the table held before the chain's first pass are the
// base, and only rows written before that pass started count against
// max_delete_ratio. A refused pass leaves the rows it wrote: without this,
// a glitch that lasts two runs doubles the table with the glitch's rows,
// and its second pass deletes every row from before it as half the table.
// The chain begins when the proving pass before the first refused one
// began: the refused pass removes only rows that pass missed too
// (docs/deletions.md, "Two passes"), so the glitch may have begun with it,
// and the rows it wrote are the glitch's own.
func (e *Engine) afterRefusal(ctx context.Context, info *contract.RunInfo, js *contract.JobState) error {
	last := js.LastSync
	if info.LiveBefore < 0 || last == nil {
		return nil
	}
	switch {
	case last.Status == contract.RunRefused && !last.RefusedSince.IsZero():
		info.RefusedSince = last.RefusedSince // a later refusal of the chain
	case last.Status == contract.RunRefused:
		// The chain's first refusal: from its prior pass's start.
		info.RefusedSince = last.StartedAt
		p, ok, err := e.Store.PriorPass(ctx, last.ID)
		if err != nil {
			return err
		}
		if ok && p.StartedAt.Before(info.RefusedSince) {
			info.RefusedSince = p.StartedAt
		}
	case !last.RefusedSince.IsZero() && (last.Status != contract.RunCompleted || last.SweepSkipped != "" ||
		last.Swept && last.Deleted == 0 && last.PendingDeletes > 0):
		// A pass of the chain that did not sweep: cut short and
		// abandoned (run --restart), or unable to prove absence; or one
		// that only found rows missing, kept pending: the next pass
		// removes them (docs/deletions.md, "Two passes"), and the
		// glitch's rows among them go freely under the chain's measure.
		info.RefusedSince = last.RefusedSince
	default:
		return nil
	}
	if last.LiveBefore >= 0 {
		info.LiveBefore = last.LiveBefore
	}
	return nil
}

// pageKeys returns the keys of a page's rows for the run's set of seen
// keys (nil when the run does not sweep). A page with dead letters gets
// none: the keys of its bad records are unknown, so the pass cannot prove
// anything absent (noProof) and deletes nothing.
func (e *Engine) pageKeys(ctx context.Context, rs *runState, sink contract.Sink, rows []contract.Row, dead []contract.DeadLetter, where string) ([]string, error) {
	if !e.sweeps(rs) {
		return nil, nil
	}
	if len(dead) > 0 {
		rs.noProof(fmt.Sprintf("%s had %d bad record(s) skipped to the dead letters: their keys are unknown", where, len(dead)))
		return nil, nil
	}
	live := rows // a copy only when the page has tombstones: most have none
	for i := range rows {
		if rows[i].Tombstone {
			live = slices.DeleteFunc(slices.Clone(rows), func(r contract.Row) bool { return r.Tombstone })
			break
		}
	}
	keys, err := sink.KeyForms(ctx, &e.Job.Table, live)
	if err != nil {
		return nil, err
	}
	if keys == nil {
		keys = []string{}
	}
	return keys, nil
}

// finishPass ends a run that read its last page: for a full pass of a job
// that sweeps, it sweeps the rows the pass did not see, unless the pass
// cannot prove them absent (noProof: the sweep is skipped, and the reason
// stored), then completes the run (recording the pass). A refused sweep
// ends the run for good (RunRefused, shown as failed) and fails with exit
// 1; any other failure leaves the run unfinished at its end, so the next
// run sweeps again. Its state writes after the sweep run under a context
// of endCtx (the run's end's): after a signal, or once the time limit
// passed, they wait at most WriteGrace, and one cancelled leaves the run
// unfinished at its end, interrupted or partial (docs/operations.md,
// Signals).
func (e *Engine) finishPass(ctx context.Context, endCtx func() (context.Context, func()), o Options, rs *runState, sink contract.Sink, log *slog.Logger) (string, error) {
	var deleted int64
	var pk passKeys
	err := error(nil)
	if e.sweeps(rs) && e.Job.Parent != nil {
		var why string
		if rs.pos.Parent == paging.NoParents {
			why, err = e.parentsUnproven(ctx)
		} else if rs.proof.reason == "" { // reads the parent's keys: only when they decide
			why, err = e.parentsMissing(ctx, sink)
		}
		if err == nil && why != "" {
			rs.noProof(why)
		}
	}
	if err == nil && e.needsPassKeys(rs) {
		pk, err = e.readPassKeys(ctx, rs)
	}
	if err == nil {
		err = e.checkPassDistinct(rs, pk)
	}
	if err != nil {
		if ctx.Err() != nil {
			return contract.RunInterrupted, nil
		}
		return contract.RunFailed, err
	}
	swept := e.sweeps(rs) && rs.proof.reason == "" && e.keysProve(rs, pk)
	var n int64
	if swept {
		n, err = e.sweep(ctx, o, rs, sink, pk, log)
	}
	wctx, stop := endCtx()
	defer stop()
	// failed is how a state write's error ends the run: interrupted or
	// partial when wctx was cancelled after a signal or the time limit,
	// failed otherwise.
	failed := func(err error) (string, error) {
		if s, ok := writeStopped(wctx); ok {
			return s, nil
		}
		return contract.RunFailed, err
	}
	if swept {
		switch {
		case errors.Is(err, contract.ErrSweepRefused):
			msg := e.Job.Secrets.Redact(err.Error())
			if ferr := e.Store.RefusePass(wctx, rs.info.ID, msg); ferr != nil {
				return failed(ferr)
			}
			rs.refused = true
			return contract.RunFailed, err
		case err != nil && ctx.Err() != nil:
			return contract.RunInterrupted, nil
		case err != nil:
			return contract.RunFailed, err
		}
		deleted = n
		failpoint.Hit("swept")
		if rs.pending != nil { // nil: the keys proved nothing (noProof), the sweep did not run
			if err := e.Store.RecordSweep(wctx, rs.info.ID, *rs.pending); err != nil {
				return failed(err)
			}
		}
	}
	if r := rs.proof.reason; r != "" && e.sweeps(rs) {
		if err := e.saveNoProof(wctx, rs); err != nil {
			return failed(err)
		}
		log.Warn("this full pass deletes nothing: it cannot prove that the records of the rows it did not see are gone; the next full pass that can will sweep",
			"deletes", e.Job.Target.Deletes, "why", r)
		if e.OnSweepSkipped != nil {
			e.OnSweepSkipped(r)
		}
	}
	if err := e.Store.CompletePass(wctx, rs.info.ID, deleted); err != nil {
		return failed(err)
	}
	rs.total.Deleted += deleted
	return contract.RunCompleted, nil
}

// sweep has the sink remove the rows the pass did not see; pk is what
// readPassKeys found in its keys (keysProve passed them). The sink reads
// the keys themselves only when it cannot tell from SeenLive that no live
// row was missed.
func (e *Engine) sweep(ctx context.Context, o Options, rs *runState, sink contract.Sink, pk passKeys, log *slog.Logger) (int64, error) {
	job := e.Job
	// A set that turned incomplete since readPassKeys (it cannot, within
	// one run) fails the loading of the keys: the sweep rolls back.
	keys := func(fn func(string) error) error {
		complete, err := e.Store.SeenKeys(ctx, rs.info.ID, fn)
		if err == nil && !complete {
			return &errNoProof{incompleteKeys}
		}
		return err
	}
	ratio := DefaultMaxDeleteRatio
	if r := job.Target.MaxDeleteRatio; r != nil {
		ratio = *r
	}
	req := contract.SweepRequest{Mode: job.Target.Deletes, Keys: keys, SeenLive: seenLive(rs, pk), LiveTally: e.liveTally(rs), MaxRatio: ratio,
		LiveBefore: rs.info.LiveBefore, Inserted: rs.total.Inserted, WrittenBefore: rs.info.RefusedSince, PriorPending: -1,
		Allow: o.AllowMassDelete, AllowCommand: o.AllowCommand, At: time.Now().UTC()}
	if err := e.priorOf(ctx, rs, &req, log); err != nil {
		return 0, err
	}
	if f := e.Fenced; f != nil {
		// A holder paused or partitioned past its lease while another took
		// the job over removes nothing (docs/deletions.md, "A pass that
		// changes hands"): checked, and the token fenced where the target
		// can, in the sweep's transaction just before it commits.
		req.Hold = func(ctx context.Context, tx contract.PageTx) error {
			if err := f.Holds(job.Name); err != nil {
				return err
			}
			if key, token, held := f.Fencing(job.Name); held && tx != nil {
				return tx.Fence(ctx, key, token)
			}
			return nil
		}
	}
	failpoint.Hit("sweep")
	t0 := time.Now()
	res, err := sink.Sweep(ctx, &job.Table, req)
	if reason, ok := noProofOf(err); ok {
		rs.noProof(reason)
		return 0, nil
	}
	if errors.Is(err, contract.ErrSweepRefused) {
		return 0, err // names the table and the numbers
	}
	if err != nil {
		return 0, fmt.Errorf("sweep %s: %w", job.Table.String(), err)
	}
	log.Info("swept rows the full pass did not see", "deletes", job.Target.Deletes, "deleted", res.Deleted,
		"pending", res.Pending, "live_rows_before", res.Live, "live_rows_before_pass", res.Base, "ms", time.Since(t0).Milliseconds())
	if res.MassMissed > 0 {
		log.Warn("this full pass removes nothing: it is the first to miss more rows than max_delete_ratio allows removing, so its misses are no picture of the source (an API serving other keys, or losing part of its list, for a while) and a row the previous proving pass missed for another reason must not go with them; the rows this pass did not see are pending, and the next full pass pairs with this one",
			"first_missed", res.MassMissed, "live_rows_before_pass", res.Base, "max_delete_ratio", ratio, "missed_by_both", res.Untrue)
	} else if res.Untrue > 0 {
		log.Warn("this full pass removes nothing: the previous proving pass missed rows that were listed since (more of them than the rows both missed), so its misses were no picture of the source (an API serving other keys for a while); the rows this pass did not see are pending, and the next full pass pairs with this one",
			"listed_since", res.PriorListed, "missed_by_both", res.Untrue)
	}
	if req.Prior == nil && res.Pending > 0 {
		log.Info("no earlier full pass proved absence: the rows this pass did not see are pending; the next full pass that proves removes those it misses too", "pending", res.Pending)
	}
	rs.pending = &res.Pending
	if e.OnSweep != nil {
		e.OnSweep(res.Deleted)
	}
	return res.Deleted, nil
}
