package sync

import (
	"context"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
)

func TestWriteContext(t *testing.T) {
	const grace = 50 * time.Millisecond
	// A signal: the write goes on for the grace, then is cancelled.
	ctx, cancel := context.WithCancel(context.Background())
	wctx, stop := writeContext(ctx, time.Time{}, grace)
	cancel()
	if wctx.Err() != nil {
		t.Fatal("the write was cancelled at once by the signal, with no grace")
	}
	<-wctx.Done()
	if st, ok := writeStopped(wctx); !ok || st != contract.RunInterrupted {
		t.Errorf("after a signal: %q %v, want interrupted", st, ok)
	}
	stop()

	// A time limit already passed: the write still gets its grace, then
	// the run is partial.
	wctx, stop = writeContext(context.Background(), time.Now().Add(-time.Hour), grace)
	if wctx.Err() != nil {
		t.Fatal("a write begun after the time limit was cancelled at once")
	}
	<-wctx.Done()
	if st, ok := writeStopped(wctx); !ok || st != contract.RunPartial {
		t.Errorf("after the time limit: %q %v, want partial", st, ok)
	}
	stop()

	// A write that returns: stop releases it, and it reads as finished on
	// its own.
	wctx, stop = writeContext(context.Background(), time.Now().Add(time.Hour), grace)
	stop()
	if _, ok := writeStopped(wctx); ok || wctx.Err() == nil {
		t.Errorf("a stopped write context: stopped %v, err %v", ok, wctx.Err())
	}
}
