package feed_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/feed"
)

// Never skip an event (docs/changes.md, "Ordering"): writers race (sinks
// on their own connections, and raw transactions that sleep between
// their insert and their commit, as a slow page or a second host would)
// while a consumer reads seq > last and acknowledges as fast as it can.
// When the writers are done and the consumer has caught up, it must have
// received every event recorded, each once, in increasing order. With
// numbers from a sequence (handed out before commit) a transaction that
// commits after a later number was read is passed over for good.
func TestRacingWritersNeverSkip(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg *target) {
		ctx := context.Background()
		const writers, pages, perPage = 6, 30, 3
		var next atomic.Int64
		var wg sync.WaitGroup
		var failed atomic.Value
		pause := 20 * time.Millisecond
		if tg.name == "sqlite" {
			pause = time.Millisecond // one writer at a time: a long pause only slows the others
		}
		// Every connection is open before any writer starts.
		_, rfd := tg.fed(t)
		sinks := make([]contract.Sink, writers)
		fds := make([]contract.FeedDB, writers)
		for w := range writers {
			sinks[w], fds[w] = tg.fed(t)
		}
		for w := range writers {
			s, fd := sinks[w], fds[w]
			wg.Add(1)
			go func() {
				defer wg.Done()
				for p := range pages {
					ids := make([]int64, perPage)
					for i := range ids {
						ids[i] = next.Add(1)
					}
					if w%2 == 0 {
						rows := make([]contract.Row, 0, perPage)
						for _, id := range ids {
							rows = append(rows, contract.Row{Values: []any{id, "v"}, Hash: fmt.Sprint("h", id)})
						}
						if _, err := s.Upsert(ctx, tg.tbl, rows); err != nil {
							failed.Store(fmt.Sprintf("writer %d page %d: %v", w, p, err))
							return
						}
						continue
					}
					if err := slowInsert(ctx, fd, tg, ids, pause); err != nil {
						failed.Store(fmt.Sprintf("writer %d page %d: %v", w, p, err))
						return
					}
				}
			}()
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		var got []int64
		read := func() int {
			b, err := feed.Next(ctx, rfd, tg.job, feed.Options{Consumer: "racer", Limit: 1 + rand.IntN(7)})
			if err != nil {
				t.Fatalf("next: %v", err)
			}
			for _, e := range b.Events {
				got = append(got, e.Seq)
			}
			if b.ID != "" {
				if _, err := feed.Ack(ctx, rfd, tg.job, "racer", b.ID, 0); err != nil {
					t.Fatalf("ack: %v", err)
				}
			}
			return len(b.Events)
		}
	loop:
		for {
			select {
			case <-done:
				break loop
			default:
				read()
			}
		}
		for read() > 0 {
		}
		if f := failed.Load(); f != nil {
			t.Fatal(f)
		}
		r, err := feed.Status(ctx, rfd, tg.job, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if want := int64(writers * pages * perPage); r.Events != want {
			t.Fatalf("%d events recorded, want %d", r.Events, want)
		}
		seen := map[int64]bool{}
		for i, s := range got {
			if seen[s] || (i > 0 && s <= got[i-1]) {
				t.Fatalf("event %d delivered twice or out of order (after %d)", s, got[max(i-1, 0)])
			}
			seen[s] = true
		}
		if int64(len(got)) != r.Events {
			t.Fatalf("the consumer received %d of the %d events recorded: %d skipped for good", len(got), r.Events, r.Events-int64(len(got)))
		}
	})
}

// slowInsert inserts rows of ids into the fed table in one transaction of
// its own that waits pause after the insert (the feed's triggers have
// numbered its events) before it commits.
func slowInsert(ctx context.Context, fd contract.FeedDB, tg *target, ids []int64, pause time.Duration) error {
	tx, err := fd.DB.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, id := range ids {
		q := fmt.Sprintf(`INSERT INTO "%s" (id, v, _idemsync_hash, _idemsync_synced_at) VALUES (%s, 'v', %s, %s)`, tg.tbl.Name, fd.Param(1), fd.Param(2), fd.Param(3))
		if _, err := tx.ExecContext(ctx, q, id, fmt.Sprint("h", id), time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
			return err
		}
	}
	time.Sleep(time.Duration(rand.Int64N(int64(pause) + 1)))
	return tx.Commit()
}
