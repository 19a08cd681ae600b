package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"
)

// ledgerFloor prints what one ledger call cannot go below on this machine
// (docs/ledger.md, "Speed"): the median of runs processes of a Go
// hello-world, of a Go program committing one INSERT into a SQLite file
// with the state file's settings, and with pgURL of one connecting to
// PostgreSQL and running one INSERT — process start included, as in the
// `idemsync key` figures printed beside them.
func (b *bench) ledgerFloor(pgURL string, runs int) error {
	bins := map[string]string{}
	for _, name := range []string{"hello", "sqlite", "pg"} {
		bins[name] = filepath.Join(b.dir, "floor-"+name)
		build := exec.Command("go", "build", "-o", bins[name], "./bench/floor/"+name)
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("build floor %s: %w", name, err)
		}
	}
	fmt.Printf("\n## ledger: the floor (a process doing only the minimum, %d runs each)\n", runs)
	hello, err := timeRuns(runs, func(int) *exec.Cmd { return exec.Command(bins["hello"]) })
	if err != nil {
		return err
	}
	fmt.Printf("Go hello-world process: %s\n", hello)
	file := filepath.Join(b.dir, "floor.db")
	lite, err := timeRuns(runs, func(i int) *exec.Cmd { return exec.Command(bins["sqlite"], file, fmt.Sprint("k", i)) })
	if err != nil {
		return err
	}
	fmt.Printf("Go process opening SQLite (modernc.org/sqlite) and committing one INSERT: %s\n", lite)
	if pgURL == "" {
		return nil
	}
	table := fmt.Sprintf("bench_floor_%d", os.Getpid())
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE `+table+` (key text PRIMARY KEY, token text NOT NULL)`); err != nil {
		return err
	}
	defer conn.Exec(ctx, `DROP TABLE IF EXISTS `+table) //nolint:errcheck // the bench's own scratch table
	pg, err := timeRuns(runs, func(i int) *exec.Cmd { return exec.Command(bins["pg"], pgURL, table, fmt.Sprint("k", i)) })
	if err != nil {
		return err
	}
	fmt.Printf("Go process connecting to PostgreSQL (pgx) and running one INSERT: %s\n", pg)
	return nil
}

// timeRuns runs the command cmd(i) runs times, one after the other, and
// returns its median wall time and mean CPU time (user and system).
func timeRuns(runs int, cmd func(i int) *exec.Cmd) (string, error) {
	var walls []time.Duration
	var cpu time.Duration
	for i := range runs {
		c := cmd(i)
		t0 := time.Now()
		out, err := c.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("%s: %v: %s", c.Path, err, out)
		}
		walls = append(walls, time.Since(t0))
		cpu += c.ProcessState.UserTime() + c.ProcessState.SystemTime()
	}
	return fmt.Sprintf("median %s p90 %s, CPU %s (user+system, mean)", msec(pct(walls, 50)), msec(pct(walls, 90)), msec(cpu/time.Duration(runs))), nil
}
