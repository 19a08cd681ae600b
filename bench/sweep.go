package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// sweepFigures measures deletions (docs/deletions.md) on a table of n rows
// in pages of size, for SQLite and, when pgURL is set, PostgreSQL: for each
// of deletes keep, hard and soft, a first load, then an unchanged re-sync
// (its wall time: what recording the seen keys and the empty sweep add to
// keep), then a re-sync after the source lost 1% of its records (the last
// ids: the API deletes those cheaply), whose sweep time is read from the
// run's log.
func (b *bench) sweepFigures(pgURL string, n, size int) error {
	fmt.Printf("\n## deletions: %d rows in pages of %d; unchanged re-sync by target.deletes, then a sweep of 1%% deleted (one pass each)\n", n, size)
	targets := []struct{ name, url string }{{"sqlite", ""}}
	if pgURL != "" {
		targets = append(targets, struct{ name, url string }{"postgres", pgURL})
	}
	for _, tg := range targets {
		resync := map[string]time.Duration{}
		for _, mode := range []string{"keep", "hard", "soft"} {
			api, stop, err := serve(n, 0)
			if err != nil {
				return err
			}
			url := tg.url
			if url != "" {
				_ = dropPostgresTable(url, "sweep_"+mode)
			}
			if url == "" {
				url = "sqlite:" + filepath.Join(b.dir, "sweep-"+mode+".db")
			}
			job := replaceTable(pageJob(api, size, 1, url), "sweep_"+mode) + "  deletes: " + mode + "\n"
			state := filepath.Join(b.dir, fmt.Sprintf("sweep-%s-%s.state.db", tg.name, mode))
			first, _, err := b.timedRun(tg.name+"-"+mode+"-first", job, state)
			if err != nil {
				stop()
				return err
			}
			again, _, err := b.timedRun(tg.name+"-"+mode+"-again", job, state)
			if err != nil {
				stop()
				return err
			}
			resync[mode] = again
			for id := n; id > n-n/100; id-- {
				api.API.Delete(id)
			}
			swept, sweepMS, err := b.timedRun(tg.name+"-"+mode+"-swept", job, state)
			stop()
			if err != nil {
				return err
			}
			fmt.Printf("%-9s deletes: %-4s  first load %6.2fs  unchanged re-sync %6.2fs  re-sync with 1%% deleted %6.2fs (sweep %6.2fs)\n",
				tg.name, mode, first.Seconds(), again.Seconds(), swept.Seconds(), float64(sweepMS)/1000)
		}
		for _, mode := range []string{"hard", "soft"} {
			fmt.Printf("%-9s unchanged re-sync, deletes: %s vs keep: %+.1f%%\n", tg.name, mode,
				100*(resync[mode].Seconds()-resync["keep"].Seconds())/resync["keep"].Seconds())
		}
		if tg.url != "" {
			for _, mode := range []string{"keep", "hard", "soft"} {
				_ = dropPostgresTable(tg.url, "sweep_"+mode)
			}
		}
	}
	return nil
}

// timedRun runs the job with the state file state, its logs in JSON, and
// returns its wall time and the ms of its sweep (0 when it logged none).
func (b *bench) timedRun(name, job, state string) (time.Duration, int64, error) {
	dir := filepath.Join(b.dir, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, 0, err
	}
	jobFile := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(jobFile, []byte(job), 0o600); err != nil {
		return 0, 0, err
	}
	c := exec.Command(b.bin, "run", jobFile, "--json", "--log-format", "json", "--state", state)
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	t0 := time.Now()
	err := c.Run()
	wall := time.Since(t0)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %v: %s", name, err, lastLines(errOut.String(), 3))
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
	return wall, ms, nil
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// dropPostgresTable drops a table the sweep figures created.
func dropPostgresTable(url, table string) error {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `DROP TABLE IF EXISTS `+pgx.Identifier{table}.Sanitize())
	return err
}
