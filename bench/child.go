package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// The loader runs as a child process of the bench, like idemsync, so that
// its CPU time (user + system of that process alone, not the in-process
// API's) can stand beside idemsync's: CPU per record is the measure a busy
// host does not blur (issue 31).
var (
	loaderKind = flag.String("loader-child", "", "internal: run the no-frills loader (sqlite, postgres, fetch) and exit")
	loaderAPI  = flag.String("loader-api", "", "internal: the API URL of -loader-child")
	loaderTo   = flag.String("loader-target", "", "internal: the SQLite file or PostgreSQL URL of -loader-child")
	loaderPgs  = flag.Int("loader-pages", 0, "internal: pages -loader-child reads")
	spin       = flag.Bool("spin", false, "internal: keep one core busy until killed (-busy)")
	busy       = flag.Bool("busy", false, "run the throughput figures with a second process keeping one core busy (the realistic host)")
)

// childMain runs the bench as one of its own child processes, when asked;
// it reports whether it did.
func childMain(size int) bool {
	switch {
	case *spin:
		runtime.GOMAXPROCS(1)
		for x := 0; ; x++ {
			_ = x * x
		}
	case *loaderKind != "":
		api := &fakeapi.Server{URL: *loaderAPI}
		var err error
		switch *loaderKind {
		case "sqlite":
			_, err = baselineSQLite(api, *loaderPgs, size, *loaderTo)
		case "postgres":
			_, err = baselinePostgres(api, *loaderTo, "bench_copy", *loaderPgs, size)
		case "fetch":
			_, err = fetchOnly(api, "", *loaderPgs, size)
		case "children-sqlite":
			err = childrenLoaderSQLite(api.URL, *loaderPgs, size, *loaderTo)
		case "children-postgres":
			err = childrenLoaderPostgres(api.URL, *loaderPgs, size, *loaderTo)
		default:
			err = fmt.Errorf("unknown loader %q", *loaderKind)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "loader:", err)
			os.Exit(1)
		}
		return true
	}
	return false
}

// loader runs the no-frills loader kind (sqlite, postgres, fetch) as a
// child process and returns its wall and CPU time.
func loader(kind string, api *fakeapi.Server, pages, size int, target string) (measured, error) {
	c := exec.Command(os.Args[0], "-loader-child", kind, "-loader-api", api.URL, "-loader-pages", strconv.Itoa(pages),
		"-size", strconv.Itoa(size), "-loader-target", target)
	c.Stderr = os.Stderr
	t0 := time.Now()
	err := c.Run()
	wall := time.Since(t0)
	if err != nil {
		return measured{}, fmt.Errorf("%s loader: %w", kind, err)
	}
	return measured{wall: wall, cpu: cpuOf(c)}, nil
}

// startBusy starts, with -busy, a process keeping one core busy, and
// returns the function that stops it.
func startBusy() (func(), error) {
	if !*busy {
		return func() {}, nil
	}
	c := exec.Command(os.Args[0], "-spin")
	if err := c.Start(); err != nil {
		return nil, err
	}
	fmt.Println("busy: a second process keeps one core busy during every figure")
	return func() { _ = c.Process.Kill(); _ = c.Wait() }, nil
}

// walBytes returns how many bytes of WAL the PostgreSQL server wrote while
// fn ran (pg_current_wal_lsn before and after). The WAL is the cluster's:
// other databases' work at the same time counts too.
func walBytes(pgURL string, fn func() error) (int64, error) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var before string
	if err := conn.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&before); err != nil {
		return 0, err
	}
	if err := fn(); err != nil {
		return 0, err
	}
	var n int64
	err = conn.QueryRow(ctx, `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::bigint`, before).Scan(&n)
	return n, err
}
