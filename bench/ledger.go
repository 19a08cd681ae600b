package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// ledgerOnly prints the side-effect ledger's figures (docs/ledger.md,
// "Speed"): the latency of one `key claim` and one `key complete` process
// as n8n's Execute Command runs them (process start included), batch
// claims per second, and 16 concurrent claimer processes on one SQLite
// file, counting the calls that failed busy.
func ledgerOnly(pgURL string, quick bool) error {
	b, done, err := newBench()
	if err != nil {
		return err
	}
	defer done()
	pairs, batch := 200, 20_000
	if quick {
		pairs, batch = 20, 2_000
	}
	states := [][2]string{{"SQLite", filepath.Join(b.dir, "ledger.db")}}
	if pgURL != "" {
		state, drop, err := ledgerPGState(pgURL)
		if err != nil {
			return err
		}
		defer drop()
		states = append(states, [2]string{"PostgreSQL", state})
	}
	if err := b.ledgerFloor(pgURL, pairs); err != nil {
		return err
	}
	goals := map[string][2]float64{"SQLite": {15, 5000}, "PostgreSQL": {25, 2000}}
	for _, s := range states {
		name, state := s[0], s[1]
		if _, err := b.key(state, "", "get", "warm"); err != nil { // create or migrate first
			return err
		}
		var claims, completes, both []time.Duration
		cpu0 := ledgerCPU.Load()
		for i := range pairs {
			k := fmt.Sprintf("pair-%d", i)
			t0 := time.Now()
			out, err := b.key(state, "", "claim", k)
			if err != nil {
				return err
			}
			t1 := time.Now()
			var res struct{ Status, Token string }
			if err := json.Unmarshal(out, &res); err != nil || res.Status != "acquired" {
				return fmt.Errorf("%s claim %s: %s", name, k, out)
			}
			if _, err := b.key(state, "", "complete", k, "--token", res.Token, "--result", `{"ok":true}`); err != nil {
				return err
			}
			t2 := time.Now()
			claims, completes, both = append(claims, t1.Sub(t0)), append(completes, t2.Sub(t1)), append(both, t2.Sub(t0))
		}
		fmt.Printf("\n## ledger on %s\n", name)
		fmt.Printf("one process per call, %d claim+complete pairs: claim median %s p90 %s; complete median %s p90 %s; pair median %s\n",
			pairs, msec(pct(claims, 50)), msec(pct(claims, 90)), msec(pct(completes, 50)), msec(pct(completes, 90)), msec(pct(both, 50)))
		per := (pct(claims, 50) + pct(completes, 50)) / 2
		fmt.Printf("  goal: median per invocation <= %.0f ms: %s (%s); CPU time per invocation %s (user+system, mean)\n",
			goals[name][0], msec(per), verdict(float64(per.Milliseconds()) <= goals[name][0]), msec(cpuSince(cpu0)/time.Duration(2*pairs)))

		var in strings.Builder
		for i := range batch {
			fmt.Fprintf(&in, `{"key":"batch-%d","params":{"n":%d}}`+"\n", i, i)
		}
		t0, c0 := time.Now(), ledgerCPU.Load()
		out, err := b.key(state, in.String(), "claim", "--batch")
		if err != nil {
			return err
		}
		el := time.Since(t0)
		if n := bytes.Count(out, []byte(`"status":"acquired"`)); n != batch {
			return fmt.Errorf("%s batch: %d of %d acquired", name, n, batch)
		}
		rate := float64(batch) / el.Seconds()
		fmt.Printf("claim --batch: %d keys in %s, %.0f claims/s (one process) — goal >= %.0f: %s; %.0f claims per CPU second\n",
			batch, el.Round(time.Millisecond), rate, goals[name][1], verdict(rate >= goals[name][1]), float64(batch)/cpuSince(c0).Seconds())
	}
	return b.ledgerConcurrent(states[0][1], 16, pairs/4)
}

// ledgerConcurrent runs claimers processes at once, each claiming and
// completing per keys, half of them on keys another claimer also races for.
func (b *bench) ledgerConcurrent(state string, claimers, per int) error {
	var mu sync.Mutex
	var calls, failed, busy int
	var wg sync.WaitGroup
	t0 := time.Now()
	for c := range claimers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				k := fmt.Sprintf("conc-%d-%d", c, i)
				if i%2 == 1 {
					k = fmt.Sprintf("shared-%d", i) // raced by every claimer
				}
				out, err := b.key(state, "", "claim", k)
				mu.Lock()
				calls++
				if err != nil {
					failed++
					if strings.Contains(strings.ToLower(err.Error()), "busy") || strings.Contains(err.Error(), "locked") {
						busy++
					}
				}
				mu.Unlock()
				var res struct{ Status, Token string }
				if err == nil && json.Unmarshal(out, &res) == nil && res.Status == "acquired" {
					_, err := b.key(state, "", "complete", k, "--token", res.Token)
					mu.Lock()
					calls++
					if err != nil {
						failed++
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(t0)
	fmt.Printf("\n## ledger: %d concurrent claimer processes on one SQLite file\n", claimers)
	fmt.Printf("%d calls in %s, %.0f calls/s; failed %d, busy %d — goal: no busy errors: %s\n",
		calls, el.Round(time.Millisecond), float64(calls)/el.Seconds(), failed, busy, verdict(busy == 0 && failed == 0))
	return nil
}

// key runs `idemsync key ARGS` on state with stdin and returns its stdout;
// a non-zero exit is an error with its stderr. It adds the process's CPU
// time (user and system) to b.cpu: on a machine shared with other work
// the wall time measures the machine's load as much as idemsync, and the
// CPU time does not.
func (b *bench) key(state, stdin string, args ...string) ([]byte, error) {
	c := exec.Command(b.bin, append([]string{"key"}, args...)...)
	c.Env = append(os.Environ(), "IDEMSYNC_STATE="+state)
	c.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	err := c.Run()
	if c.ProcessState != nil {
		ledgerCPU.Add(int64(c.ProcessState.UserTime() + c.ProcessState.SystemTime()))
	}
	if err != nil {
		return out.Bytes(), fmt.Errorf("key %s: %v: %s", args[0], err, strings.TrimSpace(errOut.String()))
	}
	return out.Bytes(), nil
}

// ledgerCPU is the CPU time of the key processes run so far.
var ledgerCPU atomic.Int64

// cpuSince is the key processes' CPU time since the reading from.
func cpuSince(from int64) time.Duration { return time.Duration(ledgerCPU.Load() - from) }

// ledgerPGState is a state URL of a new schema, dropped by drop.
func ledgerPGState(pgURL string) (string, func(), error) {
	schema := fmt.Sprintf("bench_ledger_%d", os.Getpid())
	u, err := url.Parse(pgURL)
	if err != nil {
		return "", nil, err
	}
	q := u.Query()
	q.Set("schema", schema)
	u.RawQuery = q.Encode()
	drop := func() {
		ctx := context.Background()
		if conn, err := pgx.Connect(ctx, pgURL); err == nil {
			conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
			conn.Close(ctx)
		}
	}
	return u.String(), drop, nil
}

func pct(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func msec(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}
