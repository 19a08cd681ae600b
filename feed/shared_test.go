package feed_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/feed"
	"github.com/idemsync/idemsync/sink/postgres"
)

// A table that jobs with deletes: keep share (docs/deletions.md) feeds
// one job's change feed: another job's run starting on it, without a feed
// of its own, leaves the feed in place (its writes are recorded as
// another tool's are), and one with a feed of another name is refused
// rather than turning the table's events over to its own feed. Before,
// either one's Prepare took the triggers away from the first job in the
// middle of its run, and that run's next pages recorded no event in its
// feed (docs/changes.md).
func TestSharedTableKeepsItsFeed(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg *target) {
		ctx := context.Background()
		other := tg.job + "_other"
		if url := os.Getenv("IDEMSYNC_TEST_POSTGRES_URL"); tg.name == "postgres" {
			t.Cleanup(func() {
				s, err := postgres.Open(ctx, url, nil)
				if err != nil {
					return
				}
				defer s.Close()
				if fd, err := s.FeedDB(ctx, tg.tbl); err == nil {
					for _, tb := range []string{"idemsync_change_packs", "idemsync_change_jobs", "idemsync_change_consumers"} {
						fd.DB.Exec(`DELETE FROM `+tb+` WHERE job = $1`, other)
					}
				}
			})
		}
		sA, fd := tg.fed(t) // the fed job's run starts
		tg.write(t, sA, []int64{1}, "a")

		// A job without a feed starts its run on the same table.
		sB := tg.open(t)
		plain := *tg.tbl
		plain.Changes, plain.FeedJob = nil, tg.job+"_plain"
		if err := sB.Prepare(ctx, &plain); err != nil {
			t.Fatalf("prepare of the job without a feed: %v", err)
		}
		tg.write(t, sB, []int64{2}, "b")
		tg.write(t, sA, []int64{3}, "a") // the fed job's run goes on

		// A job with a feed of another name is refused.
		sC := tg.open(t)
		fedC := *tg.tbl
		fedC.Changes = &contract.Changes{Job: other, Resource: other, Run: 7}
		err := sC.Prepare(ctx, &fedC)
		if contract.ClassOf(err) != contract.Invalid || !strings.Contains(err.Error(), tg.job) || !strings.Contains(err.Error(), tg.tbl.Name) {
			t.Errorf("prepare of a job with a feed of another name: %v; want Invalid naming the table and the feed %s", err, tg.job)
		}
		tg.write(t, sA, []int64{4}, "a")

		b, err := feed.Next(ctx, fd, tg.job, feed.Options{Consumer: "mail", Now: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		if got := keysOf(b); got != "I:1 I:2 I:3 I:4" {
			t.Errorf("feed %s: %q, want every write recorded: I:1 I:2 I:3 I:4", tg.job, got)
		}
		for _, e := range b.Events {
			if e.Resource != "items" {
				t.Errorf("event %d of %s stamped resource %q, want items", e.Seq, e.Key, e.Resource)
			}
		}
		if _, err := feed.Ack(ctx, fd, tg.job, "mail", b.ID, 0); err != nil {
			t.Fatal(err)
		}

		// The feed's own job turning target.changes off removes it.
		off := *tg.tbl
		off.Changes, off.FeedJob = nil, tg.job
		if err := sA.Prepare(ctx, &off); err != nil {
			t.Fatalf("prepare of the fed job without its feed: %v", err)
		}
		tg.write(t, sA, []int64{5}, "a")
		if b, err := feed.Next(ctx, fd, tg.job, feed.Options{Consumer: "mail", Now: time.Now()}); err != nil || len(b.Events) != 0 {
			t.Errorf("after the feed was turned off: %+v, %v; want no event", b, err)
		}
	})
}
