package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// sweepFigures measures deletions (docs/deletions.md) on a table of n rows
// in pages of size, for SQLite and, when pgURL is set, PostgreSQL. One API
// serves three jobs, deletes keep, hard and soft, each with its own table
// and state file: a first load each; then repeat rounds of an unchanged
// re-sync of each job in turn (interleaved, so that a busy moment of the
// machine hits all three), whose medians give what recording the seen
// keys and an empty sweep add to keep; then the source loses 1% of its
// records (the last ids: the API deletes those cheaply) and each job runs
// twice more (the first pass leaves the rows pending, the second removes
// them), each sweep's own time read from its log.
func (b *bench) sweepFigures(pgURL string, n, size, repeat int) error {
	fmt.Printf("\n## deletions: %d rows in pages of %d; unchanged re-sync by target.deletes (median of %d, interleaved), then a sweep of 1%% deleted\n", n, size, repeat)
	targets := []struct{ name, url string }{{"sqlite", ""}}
	if pgURL != "" {
		targets = append(targets, struct{ name, url string }{"postgres", pgURL})
	}
	modes := []string{"keep", "hard", "soft"}
	for _, tg := range targets {
		api, stop, err := serve(n, 0)
		if err != nil {
			return err
		}
		jobs, states := map[string]string{}, map[string]string{}
		for _, mode := range modes {
			url := tg.url
			if url == "" {
				url = "sqlite:" + filepath.Join(b.dir, "sweep-"+mode+".db")
			} else {
				_ = dropPostgresTable(url, "sweep_"+mode)
			}
			// With the API's count the walk proves its end (a page walk
			// ending on an empty page after a full one alone does not, and
			// would skip every sweep: docs/deletions.md).
			job := strings.Replace(pageJob(api, size, 1, url), "  size_param: per_page\n", "  size_param: per_page\n  total: meta.total\n", 1)
			jobs[mode] = replaceTable(job, "sweep_"+mode) + "  deletes: " + mode + "\n"
			states[mode] = filepath.Join(b.dir, fmt.Sprintf("sweep-%s-%s.state.db", tg.name, mode))
			first, _, err := b.timedRun(tg.name+"-"+mode+"-first", jobs[mode], states[mode])
			if err != nil {
				stop()
				return err
			}
			fmt.Printf("%-9s deletes: %-4s  first load %6.2fs\n", tg.name, mode, first.wall.Seconds())
		}
		resync := map[string][]measured{}
		for i := range repeat {
			for _, mode := range modes {
				again, _, err := b.timedRun(fmt.Sprintf("%s-%s-again-%d", tg.name, mode, i), jobs[mode], states[mode])
				if err != nil {
					stop()
					return err
				}
				resync[mode] = append(resync[mode], again)
			}
		}
		for _, mode := range modes {
			// The keys of the runs before the last proving pass are
			// dropped by the prune after each run (docs/deletions.md, "How
			// the keys are recorded"): the state holds about two passes'.
			fmt.Printf("%-9s deletes: %-4s  state file after %d re-syncs %6.2f MB\n", tg.name, mode, repeat, float64(fileSize(states[mode]))/1e6)
		}
		for id := n; id > n-n/100; id-- {
			api.API.Delete(id)
		}
		for _, mode := range modes {
			// The first pass after the deletions leaves the rows pending,
			// the second removes them (docs/deletions.md, "Two passes").
			pending, pendingMS, err := b.timedRun(tg.name+"-"+mode+"-pending", jobs[mode], states[mode])
			if err != nil {
				stop()
				return err
			}
			swept, sweepMS, err := b.timedRun(tg.name+"-"+mode+"-swept", jobs[mode], states[mode])
			if err != nil {
				stop()
				return err
			}
			var walls []string
			for _, m := range resync[mode] {
				walls = append(walls, fmt.Sprintf("%.2f", m.wall.Seconds()))
			}
			fmt.Printf("%-9s deletes: %-4s  unchanged re-sync %6.2fs, CPU %6.2fs (runs %s)  with 1%% deleted: first pass %6.2fs (sweep, pending %5.2fs), second %6.2fs (sweep, removing %5.2fs)\n",
				tg.name, mode, median(resync[mode]).wall.Seconds(), medianCPU(resync[mode]).Seconds(), strings.Join(walls, " "),
				pending.wall.Seconds(), float64(pendingMS)/1000, swept.wall.Seconds(), float64(sweepMS)/1000)
		}
		stop()
		keep, keepCPU := median(resync["keep"]).wall.Seconds(), medianCPU(resync["keep"]).Seconds()
		for _, mode := range []string{"hard", "soft"} {
			fmt.Printf("%-9s unchanged re-sync, deletes: %s vs keep: %+.1f%% wall, %+.1f%% CPU (goal <= +10%%)\n", tg.name, mode,
				100*(median(resync[mode]).wall.Seconds()-keep)/keep, 100*(medianCPU(resync[mode]).Seconds()-keepCPU)/keepCPU)
		}
		if tg.url != "" {
			for _, mode := range modes {
				_ = dropPostgresTable(tg.url, "sweep_"+mode)
			}
		}
	}
	return nil
}

// timedRun runs the job with the state file state, its logs in JSON, and
// returns its wall and CPU time and the ms of its sweep (0 when it logged
// none).
func (b *bench) timedRun(name, job, state string) (measured, int64, error) {
	dir := filepath.Join(b.dir, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return measured{}, 0, err
	}
	jobFile := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(jobFile, []byte(job), 0o600); err != nil {
		return measured{}, 0, err
	}
	c := b.command(name, "run", jobFile, "--json", "--log-format", "json", "--state", state)
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	t0 := time.Now()
	err := c.Run()
	wall := time.Since(t0)
	if err != nil {
		return measured{}, 0, fmt.Errorf("%s: %v: %s", name, err, lastLines(errOut.String(), 3))
	}
	var ms int64
	sc := bufio.NewScanner(&errOut)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l struct {
			Msg string `json:"msg"`
			MS  int64  `json:"ms"`
		}
		if json.Unmarshal(sc.Bytes(), &l) == nil && strings.HasPrefix(l.Msg, "swept rows") {
			ms = l.MS
		}
	}
	return measured{wall: wall, cpu: cpuOf(c)}, ms, nil
}

// fileSize returns the bytes of an SQLite file with its -wal file (0 for
// what is missing).
func fileSize(path string) int64 {
	var n int64
	for _, p := range []string{path, path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// dropPostgresTable drops a table the sweep figures created, and its
// writers' registration (docs/deletions.md, "One writer per swept table"):
// each bench run has its own state files, and the writer an earlier run
// registered would make the next one's first load fail with exit 2.
func dropPostgresTable(url, table string) error {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err = conn.Exec(ctx, `DROP TABLE IF EXISTS `+pgx.Identifier{table}.Sanitize()); err != nil {
		return err
	}
	var owners bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('_idemsync_owners') IS NOT NULL`).Scan(&owners); err != nil || !owners {
		return err
	}
	_, err = conn.Exec(ctx, `DELETE FROM _idemsync_owners WHERE table_name = $1`, table)
	return err
}
