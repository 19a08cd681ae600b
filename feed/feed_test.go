package feed_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/feed"
)

func keysOf(b *feed.Batch) string {
	var out []string
	for _, e := range b.Events {
		out = append(out, e.Op+":"+e.Key)
	}
	return strings.Join(out, " ")
}

// A consumer reads in batches, acknowledges them, and is independent of
// another; an unacknowledged batch is refused to a second reader while
// leased and delivered again, under a new ID, after; the old ID's ack is
// then refused as stale and nothing moves.
func TestBatchesLeasesAcks(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg *target) {
		ctx := context.Background()
		s, fd := tg.fed(t)
		tg.write(t, s, []int64{1, 2, 3}, "a")
		now := time.Now()
		b1, err := feed.Next(ctx, fd, tg.job, feed.Options{Consumer: "mail", Limit: 2, Lease: 2 * time.Second, Now: now})
		if err != nil || keysOf(b1) != "I:1 I:2" || b1.ID == "" {
			t.Fatalf("first batch %+v, %v; want I:1 I:2", b1, err)
		}
		leased := time.Now() // the lease began before this, by any clock that measures it
		if e := b1.Events[0]; e.LedgerKey != "items:1:h"+e.Hash[:16] || e.Run != 1 {
			t.Errorf("event %+v: want ledger key items:1:h<hash> and run 1", e)
		}
		if _, err := feed.Next(ctx, fd, tg.job, feed.Options{Consumer: "mail", Now: now.Add(time.Second)}); contract.ClassOf(err) != contract.Locked {
			t.Fatalf("second read under the lease: %v, want Locked", err)
		}
		other, err := feed.Next(ctx, fd, tg.job, feed.Options{Consumer: "audit", Lease: 2 * time.Second, Now: now})
		if err != nil || keysOf(other) != "I:1 I:2 I:3" {
			t.Fatalf("independent consumer: %+v, %v", other, err)
		}
		// The lease runs out: the same events again, a new batch. (On
		// PostgreSQL the database's clock measures leases: time passes
		// for real, from the read itself, so the wait counts from after it.)
		time.Sleep(time.Until(leased.Add(2100 * time.Millisecond)))
		b2, err := feed.Next(ctx, fd, tg.job, feed.Options{Consumer: "mail", Limit: 2, Now: now.Add(2 * time.Minute)})
		if err != nil || keysOf(b2) != "I:1 I:2" || b2.ID == b1.ID {
			t.Fatalf("after the lease: %+v, %v; want I:1 I:2 under a new ID", b2, err)
		}
		if _, err := feed.Ack(ctx, fd, tg.job, "mail", b1.ID, 0); !errors.Is(err, feed.ErrStaleBatch) {
			t.Fatalf("ack of the replaced batch: %v, want stale", err)
		}
		if _, err := feed.Ack(ctx, fd, tg.job, "mail", b2.ID, 5); contract.ClassOf(err) != contract.Invalid {
			t.Fatalf("ack through 5, outside the batch: %v, want Invalid", err)
		}
		if a, err := feed.Ack(ctx, fd, tg.job, "mail", b2.ID, b2.Events[0].Seq); err != nil || a.Acked != b2.Events[0].Seq {
			t.Fatalf("partial ack: %+v, %v", a, err)
		}
		if _, err := feed.Ack(ctx, fd, tg.job, "mail", b2.ID, 0); !errors.Is(err, feed.ErrStaleBatch) {
			t.Fatalf("second ack of one batch: %v, want stale", err)
		}
		b3, err := feed.Next(ctx, fd, tg.job, feed.Options{Consumer: "mail", Now: now.Add(3 * time.Minute)})
		if err != nil || keysOf(b3) != "I:2 I:3" {
			t.Fatalf("after the partial ack: %+v, %v; want I:2 I:3", b3, err)
		}
		if _, err := feed.Ack(ctx, fd, tg.job, "mail", b3.ID, 0); err != nil {
			t.Fatal(err)
		}
		// Unchanged rows record nothing; an update and filters.
		tg.write(t, s, []int64{1, 2, 3}, "a")
		tg.write(t, s, []int64{2}, "b")
		tg.write(t, s, []int64{4}, "a")
		b4, err := feed.Next(ctx, fd, tg.job, feed.Options{Consumer: "mail", Ops: []string{"I"}, Now: now.Add(4 * time.Minute)})
		if err != nil || keysOf(b4) != "I:4" {
			t.Fatalf("inserts only: %+v, %v; want I:4 (U:2 passed over)", b4, err)
		}
		if _, err := feed.Ack(ctx, fd, tg.job, "mail", b4.ID, 0); err != nil {
			t.Fatal(err)
		}
		if b, err := feed.Next(ctx, fd, tg.job, feed.Options{Consumer: "mail", Now: now.Add(5 * time.Minute)}); err != nil || len(b.Events) != 0 || b.ID != "" {
			t.Fatalf("caught up: %+v, %v; want no events, no batch", b, err)
		}
		r, err := feed.Status(ctx, fd, tg.job, now.Add(5*time.Minute))
		if err != nil || r.Events != 5 || len(r.Consumers) != 2 || r.Consumers[1].Name != "mail" || r.Consumers[1].Pending != 0 || r.Consumers[0].State != feed.StateLapsed {
			t.Fatalf("status %+v, %v", r, err)
		}
	})
}

// Pruning deletes only events every consumer acknowledged; a consumer
// behind what was pruned (created later, or reset below it) gets a gap
// error, never a silent jump, until reset --to oldest.
func TestPruneAndGap(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg *target) {
		ctx := context.Background()
		s, fd := tg.fed(t)
		tg.write(t, s, []int64{1, 2, 3}, "a")
		b, err := feed.Next(ctx, fd, tg.job, feed.Options{Consumer: "fast", Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := feed.Ack(ctx, fd, tg.job, "fast", b.ID, 0); err != nil {
			t.Fatal(err)
		}
		if p, err := feed.Prune(ctx, fd, tg.job, time.Now().Add(-time.Hour)); err != nil || p.Deleted != 0 || p.PrunedThrough != 0 {
			t.Fatalf("prune of events younger than retention: %+v, %v; want 0", p, err)
		}
		p, err := feed.Prune(ctx, fd, tg.job, time.Now().Add(time.Second))
		if err != nil || p.Deleted != 2 || p.PrunedThrough != b.Through {
			t.Fatalf("prune: %+v, %v; want the 2 events fast acknowledged, through %d", p, err, b.Through)
		}
		if b, err := feed.Next(ctx, fd, tg.job, feed.Options{Consumer: "fast"}); err != nil || keysOf(b) != "I:3" {
			t.Fatalf("fast after prune: %+v, %v", b, err)
		}
		_, err = feed.Next(ctx, fd, tg.job, feed.Options{Consumer: "late"})
		if !errors.Is(err, feed.ErrGap) || !strings.Contains(err.Error(), "events 1 to") {
			t.Fatalf("late consumer: %v, want a gap naming the pruned events", err)
		}
		r, _ := feed.Status(ctx, fd, tg.job, time.Now())
		if fmt.Sprint(r.Consumers[1].Name, r.Consumers[1].State) != "late"+feed.StateGap {
			t.Fatalf("status of late: %+v", r.Consumers)
		}
		if _, err := feed.Reset(ctx, fd, tg.job, "late", "oldest"); err != nil {
			t.Fatal(err)
		}
		if b, err := feed.Next(ctx, fd, tg.job, feed.Options{Consumer: "late"}); err != nil || keysOf(b) != "I:3" {
			t.Fatalf("late after reset: %+v, %v", b, err)
		}
	})
}

// A write statement larger than a pack (PostgreSQL cuts its events into
// packs of 1,000) reads back in batches that start and end inside packs:
// --limit cuts inside one, a partial ack resumes inside one, and every
// event comes once, in number order, with its own key.
func TestBatchesCutInsideLargeStatements(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg *target) {
		ctx := context.Background()
		s, fd := tg.fed(t)
		ids := make([]int64, 2500)
		for i := range ids {
			ids[i] = int64(i + 1)
		}
		tg.write(t, s, ids, "a")
		tg.write(t, s, ids[:1500], "b") // updates, one statement
		var next int64 = 1
		keys := map[string]int{}
		for n := 0; ; n++ {
			b, err := feed.Next(ctx, fd, tg.job, feed.Options{Consumer: "mail", Limit: 700})
			if err != nil {
				t.Fatal(err)
			}
			if b.ID == "" {
				break
			}
			through := b.Through
			if n%2 == 0 && len(b.Events) > 1 { // every other batch acknowledged halfway
				through = b.Events[len(b.Events)/2].Seq
			}
			for _, e := range b.Events {
				if e.Seq > through {
					break
				}
				if e.Seq != next {
					t.Fatalf("batch %d: event %d after %d", n, e.Seq, next-1)
				}
				next++
				keys[e.Op+":"+e.Key]++
			}
			if _, err := feed.Ack(ctx, fd, tg.job, "mail", b.ID, through); err != nil {
				t.Fatal(err)
			}
		}
		if next != 4001 || len(keys) != 4000 {
			t.Fatalf("read through %d, %d distinct events; want 4,000 (2,500 inserts, 1,500 updates), each once", next-1, len(keys))
		}
	})
}
