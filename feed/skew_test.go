package feed_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/feed"
)

// Two hosts read as one consumer of a PostgreSQL feed, the second's clock
// ten minutes ahead of the first's (and of the database's): the first's
// batch is still leased, so the second is refused, and the first's ack is
// taken. Measured by each host's own clock, the second saw the lease run
// out, took the same events under a new batch, and both hosts acted on
// them (docs/changes.md, "Batches, leases, acknowledgements"). SQLite's
// feed is one host's file: its leases are that host's clock.
func TestLeaseSkewedHosts(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg *target) {
		if tg.name == "sqlite" {
			t.Skip("a SQLite feed is one host's file: no second clock")
		}
		ctx := context.Background()
		s, fd := tg.fed(t)
		tg.write(t, s, []int64{1, 2}, "a")
		a, err := feed.Next(ctx, fd, tg.job, feed.Options{Consumer: "mail", Lease: 5 * time.Minute, Now: time.Now()})
		if err != nil || len(a.Events) != 2 {
			t.Fatalf("host A's batch: %+v, %v", a, err)
		}
		ahead := time.Now().Add(10 * time.Minute)
		if b, err := feed.Next(ctx, fd, tg.job, feed.Options{Consumer: "mail", Now: ahead}); contract.ClassOf(err) != contract.Locked {
			t.Fatalf("host B, clock 10m ahead, read under A's lease: batch %+v, err %v; want Locked (the same events to two hosts)", b, err)
		}
		r, err := feed.Status(ctx, fd, tg.job, ahead)
		if err != nil || len(r.Consumers) != 1 || r.Consumers[0].State != feed.StateLeased {
			t.Fatalf("status from host B: %+v, %v; want mail leased", r, err)
		}
		if _, err := feed.Ack(ctx, fd, tg.job, "mail", a.ID, 0); err != nil {
			t.Fatalf("host A's ack: %v", err)
		}
		// A host behind the database's clock does not hold a batch longer.
		tg.write(t, s, []int64{3}, "a")
		behind := time.Now().Add(-10 * time.Minute)
		c, err := feed.Next(ctx, fd, tg.job, feed.Options{Consumer: "mail", Lease: time.Second, Now: behind})
		if err != nil || len(c.Events) != 1 {
			t.Fatalf("host C's batch: %+v, %v", c, err)
		}
		if exp, err := time.Parse(time.RFC3339Nano, c.LeaseExpires); err != nil || exp.Before(time.Now().Add(-time.Minute)) {
			t.Fatalf("host C, clock 10m behind: lease_expires %s, %v; want the database's time plus the lease", c.LeaseExpires, err)
		}
		time.Sleep(1100 * time.Millisecond)
		d, err := feed.Next(ctx, fd, tg.job, feed.Options{Consumer: "mail", Now: behind})
		if err != nil || len(d.Events) != 1 || d.ID == c.ID {
			t.Fatalf("after C's lease ran out by the database's clock: %+v, %v; want the event again, a new batch", d, err)
		}
		if _, err := feed.Ack(ctx, fd, tg.job, "mail", c.ID, 0); !errors.Is(err, feed.ErrStaleBatch) {
			t.Fatalf("C's ack of its replaced batch: %v, want stale", err)
		}
	})
}
