package feed_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/idemsync/idemsync/feed"
)

// A consumer's first read races a prune of a feed nobody consumed yet
// (the run's prune after retention, deleting every old event because no
// consumer exists): the read must deliver the events or name the gap,
// never an empty or shortened batch as if the pruned events had never
// been (docs/changes.md, "Retention and gaps"). On PostgreSQL each
// statement of the read sees what committed before it: a read that
// checked the pruned mark before the prune committed and read the events
// after it passed them over in silence. Many rounds, each a new consumer
// and fresh events, the prune started a little before or after the read.
func TestFirstReadRacingPruneNeverSkips(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg *target) {
		ctx := context.Background()
		s, fd := tg.fed(t)
		_, pfd := tg.fed(t) // the prune's own connections, as another process
		rounds, silent := 150, 0
		if tg.name == "sqlite" {
			rounds = 30 // one writer at a time: the race cannot happen; a check that nothing breaks
		}
		for r := range rounds {
			// A feed nobody consumed yet: no consumer, never pruned.
			for _, stmt := range []string{`DELETE FROM idemsync_change_consumers WHERE job = `, `UPDATE idemsync_change_jobs SET pruned_through = 0 WHERE job = `} {
				if _, err := fd.DB.ExecContext(ctx, stmt+fd.Param(1), tg.job); err != nil {
					t.Fatal(err)
				}
			}
			tg.write(t, s, []int64{int64(3*r + 1), int64(3*r + 2), int64(3*r + 3)}, "v")
			before, err := feed.Status(ctx, fd, tg.job, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(time.Duration(r%7) * 150 * time.Microsecond)
				if _, err := feed.Prune(ctx, pfd, tg.job, time.Now().Add(time.Hour)); err != nil {
					t.Errorf("prune: %v", err)
				}
			}()
			b, err := feed.Next(ctx, fd, tg.job, feed.Options{Consumer: "first", Limit: feed.MaxLimit})
			wg.Wait()
			switch {
			case errors.Is(err, feed.ErrGap):
			case err != nil:
				t.Fatalf("round %d: %v", r, err)
			case len(b.Events) == 0 || b.Events[0].Seq != before.First:
				silent++
				t.Errorf("round %d: the first read got %d events from %v on, after %d, and no gap: events %d to %d were there when it began",
					r, len(b.Events), firstSeq(b), b.After, before.First, before.Last)
			}
			if silent > 3 {
				t.Fatalf("%d silent skips in %d rounds", silent, r+1)
			}
		}
	})
}

func firstSeq(b *feed.Batch) any {
	if len(b.Events) == 0 {
		return "nothing"
	}
	return b.Events[0].Seq
}
