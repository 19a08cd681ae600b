package main

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// feedFigures measures what the change feed (docs/changes.md) costs: a
// first load of n rows in pages of size with target.changes on against
// the same load without it (fresh table and state each, interleaved so a
// busy moment of the machine hits both; medians of repeat), and the
// events an unchanged re-sync of the fed table records (the goal: none).
// Issue 26's goal: the first load with the feed within 15% of without.
func (b *bench) feedFigures(pgURL string, n, size, repeat int) error {
	fmt.Printf("\n## change feed: first load of %d rows in pages of %d, changes on vs off (median of %d, interleaved); events of an unchanged re-sync\n", n, size, repeat)
	targets := []struct{ name, url string }{{"sqlite", ""}}
	if pgURL != "" {
		targets = append(targets, struct{ name, url string }{"postgres", pgURL})
	}
	api, stop, err := serve(n, 0)
	if err != nil {
		return err
	}
	defer stop()
	for _, tg := range targets {
		var on, off []measured
		var lastJob, lastState, lastURL string
		for i := range repeat {
			for _, fed := range []bool{false, true} {
				name := fmt.Sprintf("feed-%s-%t-%d", tg.name, fed, i)
				url, table := tg.url, fmt.Sprintf("feed_%t_%d", fed, i)
				if url == "" {
					url = "sqlite:" + filepath.Join(b.dir, name+".db")
				} else if err := dropPostgresTable(url, table); err != nil {
					return err
				}
				job := replaceTable(pageJob(api, size, 1, url), table)
				if fed {
					job += "  changes: true\n"
				}
				state := filepath.Join(b.dir, name+".state.db")
				m, _, err := b.timedRun(name, job, state)
				if err != nil {
					return err
				}
				if fed {
					on = append(on, m)
					lastJob, lastState, lastURL = job, state, url
				} else {
					off = append(off, m)
				}
			}
		}
		before, err := countEvents(lastURL)
		if err != nil {
			return err
		}
		if _, _, err := b.timedRun("feed-"+tg.name+"-again", lastJob, lastState); err != nil {
			return err
		}
		after, err := countEvents(lastURL)
		if err != nil {
			return err
		}
		// The goal is the wall time's (what a first load costs end to
		// end, the database's own work included); idemsync's CPU beside
		// it is steadier on a busy machine but leaves out the server's.
		a, o := median(off).wall, median(on).wall
		ac, oc := medianCPU(off), medianCPU(on)
		fmt.Printf("%-9s first load: changes off %6.2fs, on %6.2fs: %+.1f%% (goal <= +15%%); idemsync CPU off %.2fs, on %.2fs: %+.1f%%; unchanged re-sync recorded %d events (goal 0)\n",
			tg.name, a.Seconds(), o.Seconds(), 100*(o.Seconds()/a.Seconds()-1), ac.Seconds(), oc.Seconds(), 100*(oc.Seconds()/ac.Seconds()-1), after-before)
	}
	return nil
}

// feedOnly builds the binary and prints the change feed's figures alone.
func feedOnly(pgURL string, n, size, repeat int) error {
	b, done, err := newBench()
	if err != nil {
		return err
	}
	defer done()
	return b.feedFigures(pgURL, n, size, repeat)
}

// countEvents counts the bench job's events in the target at url.
func countEvents(url string) (int64, error) {
	const q = `SELECT count(*) FROM idemsync_changes WHERE job = 'bench'`
	var n int64
	if path, ok := strings.CutPrefix(url, "sqlite:"); ok {
		db, err := sql.Open("sqlite", path)
		if err != nil {
			return 0, err
		}
		defer db.Close()
		return n, db.QueryRow(q).Scan(&n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	return n, conn.QueryRow(ctx, q).Scan(&n)
}
