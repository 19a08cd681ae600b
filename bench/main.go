// Command bench measures idemsync against a no-frills baseline, side by
// side in one run, and prints the figures and ratios (docs/performance.md).
//
//	go run ./bench                      # SQLite, deletes overhead, latency, windows and memory figures
//	go run ./bench -pg "$IDEMSYNC_TEST_POSTGRES_URL"   # PostgreSQL too
//	go run ./bench -quick               # smaller sizes, for a smoke test
//	go run ./bench -throughput-only     # the baseline comparison alone
//	go run ./bench -seen-design 1000000 # what tracking deletions costs (docs/deletions.md)
//	go run ./bench -fanout-only         # the parent → child fan-out figures alone
//	go run ./bench -sweep 1000000       # deletes keep/hard/soft: re-sync overhead and sweep time
//	go run ./bench -parents 1000000     # a child run over 1,000,000 parents: peak RSS, state growth
//	go run ./bench -feed 200000         # the change feed: first load on vs off, events of a re-sync
//	go run ./bench -ledger              # the side-effect ledger: per-call latency, batch, 16 claimers (docs/ledger.md)
//	go run ./bench -pg URL -pgstate     # the state in PostgreSQL: lease and fence per page, one transaction per page
//	go run ./bench -children            # child tables: orders × 5 line items against flattening by hand (-records orders)
//
// It starts the example API in-process on 127.0.0.1, builds the idemsync
// binary, and runs every idemsync measurement as a subprocess so that its
// peak RSS can be read.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

func main() {
	var (
		records = flag.Int("records", 200_000, "records for the throughput figures")
		size    = flag.Int("size", 1000, "records per page for the throughput figures")
		pg      = flag.String("pg", os.Getenv("IDEMSYNC_BENCH_POSTGRES_URL"), "PostgreSQL URL for the PostgreSQL figures (empty: skip)")
		quick   = flag.Bool("quick", false, "small sizes: a smoke test of the harness, not figures to report")
		skipRSS = flag.Bool("skip-rss", false, "skip the peak-memory figures (the 1,000,000-record run)")
		only    = flag.Bool("throughput-only", false, "only the throughput figures (no latency, windows or memory), to compare two trees quickly")
		repeat  = flag.Int("repeat", 5, "runs of each throughput figure; the median is printed")
		seen    = flag.Int("seen-design", 0, "only the seen-in-pass design figures (docs/deletions.md) on a table of this many rows")
		fanout  = flag.Bool("fanout-only", false, "only the fan-out figures (1,000 orders × 3 pages of items at 20 ms, fanout_concurrency 1 and 8)")
		parents = flag.Int("parents", 0, "only the figure of a child run over a parent table of this many rows (peak RSS, state file growth)")
		sweep   = flag.Int("sweep", 0, "only the deletion figures (docs/deletions.md) on a table of this many rows")
		feedN   = flag.Int("feed", 0, "only the change feed figures (docs/changes.md) on a table of this many rows")
		feedRd  = flag.Int("feed-read", 0, "only the change feed's read figure (docs/changes.md): this many rows written in one statement, read back in batches of 100")
		ledger  = flag.Bool("ledger", false, "only the side-effect ledger's figures (docs/ledger.md), on SQLite and with -pg PostgreSQL")
		prof    = flag.String("cpuprofile", "", "write a CPU profile of every idemsync run to this folder (NAME.pprof)")
		pgstate = flag.Bool("pgstate", false, "only the state-in-PostgreSQL figures (lease and fence per page, one transaction per page; needs -pg)")
	)
	flag.Parse()
	profiles = *prof
	if childMain(*size) {
		return
	}
	if *pgstate {
		// Median of 5 unless -repeat says: the lease's goal is a few percent.
		n := 5
		flag.Visit(func(f *flag.Flag) {
			if f.Name == "repeat" {
				n = *repeat
			}
		})
		if err := leaseFigures(*pg, *records, *size, n); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if *childrenBench {
		if err := childrenOnly(*pg, *records, *size, *repeat); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if *ledger {
		if err := ledgerOnly(*pg, *quick); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if *fanout {
		if err := fanoutOnly(*quick); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if *parents > 0 {
		b, done, err := newBench()
		if err == nil {
			err = b.parentsMemory(*parents)
			done()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if *sweep > 0 {
		if err := sweepOnly(*pg, *sweep, *size, *repeat); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if *feedN > 0 {
		if err := feedOnly(*pg, *feedN, *size, *repeat); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if *feedRd > 0 {
		if err := feedReadFigures(*pg, *feedRd, 20); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if *seen > 0 {
		if err := seenDesignIn(*pg, *seen, *size); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if *quick {
		*records = 20_000
	}
	if *quick {
		*repeat = 1
	}
	if err := run(*records, *size, *repeat, *pg, *quick, *skipRSS, *only); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// sweepOnly builds the binary and prints the deletion figures alone.
func sweepOnly(pgURL string, n, size, repeat int) error {
	b, done, err := newBench()
	if err != nil {
		return err
	}
	defer done()
	return b.sweepFigures(pgURL, n, size, repeat)
}

func run(records, size, repeat int, pgURL string, quick, skipRSS, throughputOnly bool) error {
	b, done, err := newBench()
	if err != nil {
		return err
	}
	defer done()
	dir := b.dir

	// 1. Throughput with no latency: baseline vs first load vs unchanged re-sync.
	fmt.Printf("\n## throughput: %d records in pages of %d, no latency (median of %d runs)\n", records, size, repeat)
	api, stop, err := serve(records, 0)
	if err != nil {
		return err
	}
	pages := (records + size - 1) / size
	stopBusy, err := startBusy()
	if err != nil {
		return err
	}
	defer stopBusy()
	var bases, fetches, firsts, agains []measured
	for i := range repeat {
		// Interleaved: the loader, the fetch-only ceiling, idemsync's
		// first load and its unchanged re-sync, in turn.
		base, err := loader("sqlite", api, pages, size, filepath.Join(dir, fmt.Sprintf("baseline-%d.db", i)))
		if err != nil {
			return err
		}
		fetch, err := loader("fetch", api, pages, size, "")
		if err != nil {
			return err
		}
		db := "sqlite:" + filepath.Join(dir, fmt.Sprintf("sqlite-%d.db", i))
		first, err := b.idemsync(fmt.Sprintf("sqlite-first-%d", i), pageJob(api, size, 1, db))
		if err != nil {
			return err
		}
		again, err := b.idemsync(fmt.Sprintf("sqlite-again-%d", i), pageJob(api, size, 1, db))
		if err != nil {
			return err
		}
		bases, fetches, firsts = append(bases, base), append(fetches, fetch), append(firsts, first)
		agains = append(agains, again)
	}
	base, fetch, first, again := median(bases), median(fetches), median(firsts), median(agains)
	b.table(records, []row{
		{"fetch only (the ceiling: fetch and decode, no write)", fetch.wall, fetch.cpu, 0, 0},
		{"SQLite loader (prepared INSERT, tx per page)", base.wall, base.cpu, 0, 0},
		{"SQLite idemsync first load", first.wall, first.cpu, first.rss, first.written},
		{"SQLite idemsync unchanged re-sync", again.wall, again.cpu, again.rss, again.written},
	})
	fmt.Printf("ratio: first load %.2fx the loader's records/s (goal >= 1.3 quiet, >= 1.0 busy), CPU per record %.2fx the loader's (goal <= 1); re-sync %.2fx the fetch-only ceiling (goal >= 0.8), wrote %d rows (goal 0)\n",
		base.wall.Seconds()/first.wall.Seconds(), medianCPU(firsts).Seconds()/medianCPU(bases).Seconds(),
		fetch.wall.Seconds()/again.wall.Seconds(), again.written)
	ceilingCPU(fetches, agains)
	b.categories(records, "sqlite-first-0", "sqlite-again-0")
	if pgURL != "" {
		if err := b.postgres(api, pgURL, records, pages, size, repeat, fetches); err != nil {
			return err
		}
	}
	stop()
	if throughputOnly {
		return nil
	}
	// What target.deletes adds to an unchanged re-sync (issue 22's goal:
	// hard and soft within 10% of keep), on the throughput figures' table.
	if err := b.sweepFigures(pgURL, records, size, repeat); err != nil {
		return err
	}
	if err := b.feedFigures(pgURL, records, size, repeat); err != nil {
		return err
	}
	return b.rest(quick, skipRSS, size)
}

// rest measures what does not compare with the baseline: latency-bound
// walks, windows, and peak memory.
func (b *bench) rest(quick, skipRSS bool, size int) error {
	// 2. Latency-bound: 200 pages, 50 ms a request.
	const latPages, latSize, latency = 200, 100, 50 * time.Millisecond
	if err := b.latency(latPages, latSize, latency, quick); err != nil {
		return err
	}

	// 3. A cursor walk in daily windows: one at a time against eight.
	winPages := 2000
	if quick {
		winPages = 200
	}
	if err := b.windows(winPages, 10, 30, latency); err != nil {
		return err
	}

	// 4. Fan-out: 1,000 orders × 3 pages of items, one order at a time
	// against eight.
	if err := b.fanout(fanoutParents(quick), 20*time.Millisecond); err != nil {
		return err
	}

	// 5. Peak memory at 10,000 and 1,000,000 records, and of a child run
	// over 1,000,000 parents.
	if !skipRSS {
		big := 1_000_000
		if quick {
			big = 100_000
		}
		if err := b.memory(10_000, big, size); err != nil {
			return err
		}
		if err := b.parentsMemory(big); err != nil {
			return err
		}
	}
	return nil
}

// serve starts the example API with n records and a per-request latency.
func serve(n int, latency time.Duration) (*fakeapi.Server, func(), error) {
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := fakeapi.Start(ctx, "127.0.0.1:0", fakeapi.Options{Records: n, Latency: latency, Seed: 1})
	if err != nil {
		cancel()
		return nil, nil, err
	}
	return srv, func() { srv.Close(); cancel() }, nil
}

// fanoutParents is the number of orders of the fan-out figures.
func fanoutParents(quick bool) int {
	if quick {
		return 100
	}
	return 1000
}

// fanoutOnly builds the binary and measures the fan-out case alone.
func fanoutOnly(quick bool) error {
	b, done, err := newBench()
	if err != nil {
		return err
	}
	defer done()
	return b.fanout(fanoutParents(quick), 20*time.Millisecond)
}

// profiles is -cpuprofile: the folder every measured run writes its CPU
// profile to.
var profiles string

// newBench builds the binary with CGO_ENABLED=0 into a temporary folder,
// prints the machine line, and returns the bench and the function that
// removes the folder.
func newBench() (*bench, func(), error) {
	dir, err := os.MkdirTemp("", "idemsync-bench-")
	if err != nil {
		return nil, nil, err
	}
	done := func() { os.RemoveAll(dir) }
	bin := filepath.Join(dir, "idemsync")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		done()
		return nil, nil, fmt.Errorf("build: %w", err)
	}
	fmt.Printf("machine: %s/%s, %d cores, %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	if profiles != "" {
		if err := os.MkdirAll(profiles, 0o700); err != nil {
			done()
			return nil, nil, err
		}
	}
	return &bench{bin: bin, dir: dir, profiles: profiles}, done, nil
}
