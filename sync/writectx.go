package sync

import (
	"context"
	"errors"
	"time"

	"github.com/idemsync/idemsync/contract"
)

// WriteGrace is how long a page write in progress may go on after the
// first SIGINT/SIGTERM or once --time-limit has passed: a database that
// answers commits the page; one that does not (a lock held by another
// session, a frozen server) has the write cancelled, the page rolled back
// and the checkpoint left at the last committed page.
const WriteGrace = 5 * time.Second

// Causes of a cancelled page write (context.Cause of the write context).
var (
	errWriteSignal    = errors.New("interrupted: the page write did not finish within the grace")
	errWriteTimeLimit = errors.New("time limit: the page write did not finish within the grace")
	errWriteDone      = errors.New("page write finished")
)

// writeContext returns the context a page write runs under: not cancelled
// by ctx itself, but grace after ctx is done (a signal) or grace after
// limitAt (zero: none) or after the write starts, whichever is later (a
// first page started after the time limit still gets its grace). The
// returned stop releases it; call it once the write returned.
func writeContext(ctx context.Context, limitAt time.Time, grace time.Duration) (context.Context, func()) {
	wctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	var timers []*time.Timer
	// A timer firing after stop cancels a context already done: harmless.
	stopSignal := context.AfterFunc(ctx, func() {
		time.AfterFunc(grace, func() { cancel(errWriteSignal) })
	})
	if !limitAt.IsZero() {
		at := limitAt
		if now := time.Now(); now.After(at) {
			at = now
		}
		timers = append(timers, time.AfterFunc(time.Until(at)+grace, func() { cancel(errWriteTimeLimit) }))
	}
	return wctx, func() {
		stopSignal()
		for _, t := range timers {
			t.Stop()
		}
		cancel(errWriteDone)
	}
}

// limitContext returns wctx (a write context) cancelled too, with the
// time limit's cause, grace after limitAt (zero: never) or after now,
// whichever is later: the state writes of a run's end, begun after the
// limit passed, get the grace a page write begun then gets. The returned
// stop releases it.
func limitContext(wctx context.Context, limitAt time.Time, grace time.Duration) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(wctx)
	if limitAt.IsZero() {
		return ctx, func() { cancel(errWriteDone) }
	}
	at := limitAt
	if now := time.Now(); now.After(at) {
		at = now
	}
	t := time.AfterFunc(time.Until(at)+grace, func() { cancel(errWriteTimeLimit) })
	return ctx, func() {
		t.Stop()
		cancel(errWriteDone)
	}
}

// writeStopped tells how a run ends when its page write failed because the
// write context was cancelled: interrupted (signal) or partial (time
// limit). ok is false when the write failed on its own.
func writeStopped(wctx context.Context) (status string, ok bool) {
	switch context.Cause(wctx) {
	case errWriteSignal:
		return contract.RunInterrupted, true
	case errWriteTimeLimit:
		return contract.RunPartial, true
	}
	return "", false
}

// beginFailed ends a run whose start failed: interrupted (exit 130) when a
// signal came meanwhile, partial (exit 0) when the time limit passed and
// the wait for the database was cancelled, failed otherwise.
func (e *Engine) beginFailed(ctx context.Context, res *Result, started time.Time, stopped string, cancelled bool, err error) (*Result, error) {
	res.DurationMS = time.Since(started).Milliseconds()
	switch {
	case cancelled && stopped == contract.RunPartial:
		e.Logger.Warn("time limit: the target database did not answer within the grace before the first page; nothing changed",
			"job", e.Job.Name, "grace", WriteGrace, "err", err)
		res.Status = contract.RunPartial
		return res, nil
	case cancelled || ctx.Err() != nil:
		res.Status = contract.RunInterrupted
		res.Error = contract.ErrInterrupted.Error()
		return res, contract.ErrInterrupted
	}
	return res, err
}
