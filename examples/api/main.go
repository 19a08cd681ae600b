// Command api serves the fake paginated API that idemsync's examples and
// acceptance tests sync from (package internal/fakeapi), until SIGINT or
// SIGTERM:
//
//	go run ./examples/api -addr 127.0.0.1:8080 -records 1000 -latency 5ms [-fault-rate 0.3] [-token T]
//
// It prints "example API listening on http://ADDR" to stderr once the port
// is open. Routes: /page, /offset, /cursor, /cursor-url, /cursor-header,
// /link, /hwm, /all and /redirect; see the fakeapi package documentation
// for their parameters and JSON shapes.
//
// With -shop it serves the two-level shop instead (the fan-out examples,
// examples/shop-fanout.yaml): /customers, /orders and /orders/{id}/items,
// -records orders with 0..12 items each; -shop=github serves /repos and
// /repos/{owner}/{name}/issues (examples/github-fanout.yaml).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "api:", err)
		}
		os.Exit(2)
	}
}

// run parses args, serves until ctx is done and returns nil after a clean
// shutdown, or the error that prevented serving.
func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("api", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address (port 0 picks a free one)")
	records := fs.Int("records", 1000, "number of records, ids 1..N")
	pageSize := fs.Int("page-size", 50, "page size when a request names none")
	latency := fs.Duration("latency", 0, "delay before every response")
	seed := fs.Int64("seed", 0, "seed of the record contents")
	sameTS := fs.Int("same-timestamp-every", 1, "runs of this many ids share one updated_at")
	faultRate := fs.Float64("fault-rate", 0, "probability (0..1) that a list request gets a fault")
	faultKinds := fs.String("fault-kinds", "", "comma-separated fault kinds (default all: "+strings.Join(fakeapi.FaultKinds(), ",")+")")
	faultSeed := fs.Int64("fault-seed", 0, "seed of the fault sequence")
	maxFaults := fs.Int("fault-max-consecutive", 0, "never more faults in a row than this (0 = no cap)")
	slowDelay := fs.Duration("slow-delay", fakeapi.DefaultSlowDelay, "how long the slow fault waits")
	mutateEvery := fs.Int("mutate-every", 0, "after every N successful list responses, update one record and add one (0 = never)")
	shop := fs.String("shop", "", "serve the two-level shop API instead: shop (orders → items) or github (repos → issues)")
	token := fs.String("token", os.Getenv("FAKEAPI_TOKEN"), "require \"Authorization: Bearer TOKEN\" (default $FAKEAPI_TOKEN)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *records < 0 || *pageSize < 1 || *sameTS < 1 || *latency < 0 || *mutateEvery < 0 {
		return errors.New("-records, -latency and -mutate-every must not be negative; -page-size and -same-timestamp-every must be at least 1")
	}
	opts := fakeapi.Options{
		Records:            *records,
		PageSize:           *pageSize,
		Latency:            *latency,
		Seed:               *seed,
		SameTimestampEvery: *sameTS,
		Token:              *token,
		Faults: fakeapi.Faults{
			Rate:           *faultRate,
			Seed:           *faultSeed,
			SlowDelay:      *slowDelay,
			MaxConsecutive: *maxFaults,
		},
	}
	if opts.Records == 0 {
		opts.Records = -1 // fakeapi reads 0 as "default"; here it means none
	}
	if *faultKinds != "" {
		opts.Faults.Kinds = strings.Split(*faultKinds, ",")
	}
	if *shop != "" {
		srv, err := fakeapi.StartShop(ctx, *addr, fakeapi.ShopOptions{Shape: *shop, Parents: opts.Records,
			PageSize: *pageSize, Latency: *latency, Seed: *seed, Faults: opts.Faults})
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "example API listening on %s\n", srv.URL)
		return srv.Wait()
	}

	srv, err := fakeapi.Start(ctx, *addr, opts)
	if err != nil {
		return err
	}
	if *mutateEvery > 0 {
		srv.API.MutateEvery(*mutateEvery, churn(*records))
	}
	fmt.Fprintf(stderr, "example API listening on %s\n", srv.URL)
	return srv.Wait()
}

// churn returns a mutation that touches the data set like a live system:
// each call changes one of the first n records (cycling through them in a
// fixed order, so runs are reproducible) and adds a new one. It is safe to
// call from concurrent requests.
func churn(n int) func(*fakeapi.API) {
	var calls atomic.Int64
	return func(a *fakeapi.API) {
		k := calls.Add(1)
		if n > 0 {
			a.Update(1+int(k*7919%int64(n)), func(r *fakeapi.Record) {
				r.Total += 100
				r.Active = !r.Active
			})
		}
		a.Add(1)
	}
}
