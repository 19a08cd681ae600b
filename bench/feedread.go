package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/feed"
	"github.com/idemsync/idemsync/sink"
)

// feedReadFigures measures what reading the change feed back costs
// (docs/changes.md, "Cost"): n rows written into a fed table in one
// statement, as a first load in pages of n rows writes them, then
// batches of 100 read and acknowledged by one consumer from the start,
// and as many from the middle, as idemsync changes and serve read them.
// The figure is the median time of a batch, which should not grow with n.
func feedReadFigures(pgURL string, n, batches int) error {
	fmt.Printf("\n## change feed read: %d rows written in one statement, then %d batches of 100 read and acknowledged from the start and %d from the middle (median per batch)\n", n, batches, batches)
	dir, err := os.MkdirTemp("", "idemsync-feedread-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	targets := []struct{ name, url string }{{"sqlite", "sqlite:" + filepath.Join(dir, "feed.db")}}
	if pgURL != "" {
		targets = append(targets, struct{ name, url string }{"postgres", pgURL})
	}
	ctx := context.Background()
	for _, tg := range targets {
		write, read, err := feedRead(ctx, tg.url, n, batches)
		if err != nil {
			return fmt.Errorf("%s: %w", tg.name, err)
		}
		fmt.Printf("%-9s write of %d rows with the feed on %6.2fs; a batch of 100: %7.2f ms from the start, %7.2f ms from the middle\n",
			tg.name, n, write.Seconds(), ms(read[0]), ms(read[1]))
	}
	return nil
}

// feedRead writes n rows into a fresh fed table at url in one Upsert and
// returns how long that took and the median time of a batch read from
// the start and from the middle.
func feedRead(ctx context.Context, url string, n, batches int) (time.Duration, [2]time.Duration, error) {
	var read [2]time.Duration
	s, err := sink.OpenTarget(ctx, contract.Conn{URL: url}, nil)
	if err != nil {
		return 0, read, err
	}
	defer s.Close()
	tbl := &contract.Table{Name: "bench_feed_read", Key: []string{"id"}, Create: true,
		Columns: []contract.Column{{Name: "id", Type: contract.TypeInteger}, {Name: "v", Type: contract.TypeText}},
		Changes: &contract.Changes{Job: "bench-feed-read", Resource: "items", Run: 1}}
	fd, err := s.FeedDB(ctx, tbl)
	if err != nil {
		return 0, read, err
	}
	// A fresh table and feed: the rows and events of an earlier run go
	// without events of their own.
	for _, q := range []string{`DROP TABLE IF EXISTS bench_feed_read`, `DELETE FROM idemsync_change_consumers WHERE job = 'bench-feed-read'`} {
		if _, err := fd.DB.ExecContext(ctx, q); err != nil {
			return 0, read, err
		}
	}
	if _, err := feed.Prune(ctx, fd, "bench-feed-read", time.Now().Add(time.Second)); err != nil {
		return 0, read, err
	}
	if err := s.Prepare(ctx, tbl); err != nil {
		return 0, read, err
	}
	rows := make([]contract.Row, n)
	for i := range rows {
		v := "value " + strconv.Itoa(i)
		h := sha256.Sum256([]byte(v))
		rows[i] = contract.Row{Values: []any{int64(i + 1), v}, Hash: hex.EncodeToString(h[:])}
	}
	t0 := time.Now()
	if _, err := s.Upsert(ctx, tbl, rows); err != nil {
		return 0, read, err
	}
	write := time.Since(t0)
	r, err := feed.Status(ctx, fd, "bench-feed-read", time.Now())
	if err != nil {
		return 0, read, err
	}
	last := r.Last
	for i, from := range []int64{last - int64(n), last - int64(n/2)} {
		if _, err := feed.Reset(ctx, fd, "bench-feed-read", "bench", strconv.FormatInt(from, 10)); err != nil {
			return 0, read, err
		}
		var took []time.Duration
		for range batches {
			t0 := time.Now()
			b, err := feed.Next(ctx, fd, "bench-feed-read", feed.Options{Consumer: "bench", Limit: 100})
			if err != nil {
				return 0, read, err
			}
			if len(b.Events) != 100 {
				return 0, read, fmt.Errorf("a batch of %d events, want 100", len(b.Events))
			}
			if _, err := feed.Ack(ctx, fd, "bench-feed-read", "bench", b.ID, 0); err != nil {
				return 0, read, err
			}
			took = append(took, time.Since(t0))
		}
		slices.Sort(took)
		read[i] = took[len(took)/2]
	}
	return write, read, nil
}
