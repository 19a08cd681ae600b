package e2e

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

var (
	modelSeeds     = flag.Int("seeds", 200, "model test: how many seeds to run")
	modelPGSeeds   = flag.Int("pg-seeds", 40, "model test: how many seeds TestModelPostgres runs")
	modelSeed      = flag.Int64("seed", -1, "model test: run only this seed")
	modelSeedStart = flag.Int64("seed-start", 1, "model test: first seed")
	modelSkipFlag  = flag.String("model-skip", os.Getenv("IDEMSYNC_MODEL_SKIP"), "model test: behaviour kinds never enabled, comma-separated (also IDEMSYNC_MODEL_SKIP)")
	// Hostile kinds are off unless named: each is switched on once
	// idemsync survives it (fakeapi.HostileKinds, docs/fault-tolerance.md).
	modelHostileSeeds   = flag.Int("hostile-seeds", envInt("IDEMSYNC_MODEL_HOSTILE_SEEDS", 60), "model test: how many seeds TestModelHostile runs (also IDEMSYNC_MODEL_HOSTILE_SEEDS)")
	modelHostilePGSeeds = flag.Int("hostile-pg-seeds", envInt("IDEMSYNC_MODEL_HOSTILE_PG_SEEDS", 12), "model test: how many seeds TestModelHostilePostgres runs (also IDEMSYNC_MODEL_HOSTILE_PG_SEEDS)")
	modelHostileFlag    = flag.String("model-hostile", os.Getenv("IDEMSYNC_MODEL_HOSTILE"), "model test: hostile kinds enabled, comma-separated, or all (also IDEMSYNC_MODEL_HOSTILE)")
)

// TestModel is the model-based adversarial test of "Exit 0 means complete"
// (docs/guarantees.md): per seed a scenario (fakeapi.NewScenario), the real
// binary under a random schedule of runs, kills, slices, resumes and restarts,
// and the invariant checked after every exit. See docs/fault-tolerance.md.
func TestModel(t *testing.T) {
	checkHostileKinds(t)
	runModel(t, *modelSeeds, modelHostile(), func(t *testing.T) modelTarget { return modelSQLite(t) })
}

// TestModelPostgres runs the first -pg-seeds seeds of TestModel (the same
// scenarios) with a PostgreSQL target, each in a schema of its own.
func TestModelPostgres(t *testing.T) {
	pg := postgresURL(t)
	checkHostileKinds(t)
	runModel(t, *modelPGSeeds, modelHostile(), func(t *testing.T) modelTarget { return modelPostgres(t, pg) })
}

// TestModelHostile runs -hostile-seeds seeds with every hostile kind of
// issue 22 drawn (fakeapi.HostileKinds: shifts, key swaps, versions going
// back, moving bounds, error pages, GraphQL errors, a shared table), the
// sweep invariant checked after every exit (docs/fault-tolerance.md).
// -model-hostile narrows the kinds.
func TestModelHostile(t *testing.T) {
	checkHostileKinds(t)
	runModel(t, *modelHostileSeeds, hostileOrAll(), func(t *testing.T) modelTarget { return modelSQLite(t) })
}

// TestModelHostilePostgres runs the first -hostile-pg-seeds seeds of
// TestModelHostile with a PostgreSQL target.
func TestModelHostilePostgres(t *testing.T) {
	pg := postgresURL(t)
	checkHostileKinds(t)
	runModel(t, *modelHostilePGSeeds, hostileOrAll(), func(t *testing.T) modelTarget { return modelPostgres(t, pg) })
}

// hostileOrAll is -model-hostile's kinds, or, when it names none, every
// kind (keyswap too: since a row goes only when two consecutive proving
// passes missed it, a swap whose pass skipped its sweep no longer dilutes
// the ratio of a later swapped pass: docs/deletions.md, "Two passes").
func hostileOrAll() map[string]bool {
	if on := modelHostile(); len(on) > 0 {
		return on
	}
	on := map[string]bool{}
	for _, k := range append(append([]string{}, fakeapi.HostileKinds...), fanoutHostileKinds...) {
		on[k] = true
	}
	return on
}

// runModel runs n seeds from -seed-start (or only -seed) in parallel,
// each with target's database, and reports the summary.
func runModel(t *testing.T, n int, hostile map[string]bool, target func(t *testing.T) modelTarget) {
	skip := modelSkip()
	seeds := []int64{}
	if *modelSeed >= 0 {
		seeds = append(seeds, *modelSeed)
	} else {
		for i := 0; i < n; i++ {
			seeds = append(seeds, *modelSeedStart+int64(i))
		}
	}
	sum := &modelSummary{exits: map[string]int{}, checksSweeps: true}
	t.Run("seeds", func(t *testing.T) {
		for _, seed := range seeds {
			t.Run(fmt.Sprint(seed), func(t *testing.T) {
				t.Parallel()
				modelSeedRun(t, fakeapi.NewHostileScenario(seed, skip, hostile), sum, target(t))
			})
		}
	})
	sum.report(t)
}

// modelSkip is the set of behaviour kinds -model-skip excludes.
func modelSkip() map[string]bool {
	skip := map[string]bool{}
	for _, k := range strings.Split(*modelSkipFlag, ",") {
		if k = strings.TrimSpace(k); k != "" {
			skip[k] = true
		}
	}
	return skip
}

// modelSeedRun drives one scenario until exit 0 (completed) or the step budget.
func modelSeedRun(t *testing.T, sc fakeapi.Scenario, sum *modelSummary, tgt modelTarget) {
	repro := fmt.Sprintf("go test ./e2e -run '%s$' -seed %d -v", strings.Split(t.Name(), "/")[0], sc.Seed)
	if *modelSkipFlag != "" {
		repro += " -model-skip=" + *modelSkipFlag
	}
	repro += modelHostileRepro()
	t.Log(sc.String())
	api := fakeapi.NewModelAPI(sc)
	srv := httptest.NewServer(api)
	defer srv.Close()
	dir := t.TempDir()
	initial := api.WindowsInitial()
	job := writeJob(t, dir, "job.yaml", modelJob(sc, srv.URL, tgt.url, tgt.table, initial))
	guard := newSweepGuard(api)
	hh := newModelHostileHarness(t, sc, api, dir, srv.URL, tgt)
	ops := newModelOps(sc, api, tgt, dir, modelSkip())
	rng := rand.New(rand.NewSource(sc.Seed * 7919))
	fail := func(format string, args ...any) {
		sum.mu.Lock()
		sum.failed++
		sum.failedSeeds = append(sum.failedSeeds, sc.Seed)
		sum.mu.Unlock()
		t.Errorf("%s: %s\nreproduce: %s", sc, fmt.Sprintf(format, args...), repro)
	}
	defer func() { sum.mu.Lock(); sum.seeds++; sum.mu.Unlock() }()

	start := api.Snapshot() // the data set when the current run began
	// known holds every id the source had before the current run began;
	// claimSwept whether the next completed run must have swept those gone
	// (a full pass after a start the harness saw: not after an overlapping
	// pair, whose other run may have begun earlier).
	known, claimSwept := map[int]bool{}, true
	for id := range start {
		known[id] = true
	}
	// pendingGone holds the records absent from the source at the last
	// completed full pass whose sweep the harness checked (nil before
	// one): a row goes at the second proving pass that misses it
	// (docs/deletions.md, "Two passes"), so the next checked pass must
	// have swept those still absent.
	var pendingGone map[int]bool
	drng := rand.New(rand.NewSource(sc.Seed ^ 0x676f6e65))
	refusals, completed := 0, 0
	exits := map[int]int{} // the model job's exit codes, for the progress check
	// Now and then the job file changes its page size between invocations
	// (a random source of its own, so the schedule of runs stays as it
	// was): an unfinished run must then exit 2 naming the key, never be
	// continued over the new walk; the harness answers with run --restart.
	rrng := rand.New(rand.NewSource(sc.Seed ^ 0x72657370))
	respecced, restartNext := false, false
	walkRefusal := func(e modelExit) bool {
		return e.code == 2 && respecced && strings.Contains(e.stderr, "was started with another walk") &&
			strings.Contains(e.stderr, "pagination.size: ")
	}
	steps := 45 + 15*(hh.completions()-2)
	for step := 0; step < steps; step++ {
		if oe, ran := hh.runOther(t, dir); ran {
			table, dups := tgt.read(t, dir)
			if dups > 0 {
				fail("after the second job's run (exit %d): %d duplicate keys", oe.code, dups)
				return
			}
			if bad := guard.check(table); len(bad) > 0 {
				fail("after the second job's run (exit %d) a sweep broke its invariant: %d rows, e.g. %s\n%s", oe.code, len(bad), strings.Join(bad[:min(5, len(bad))], "; "), oe.stderr)
				return
			}
			if oe.code != 0 && oe.code != 1 && oe.code != 2 && oe.code != 3 {
				fail("the second job exited %d: %s", oe.code, modelLastLine(oe.stderr))
				return
			}
		}
		if rrng.Intn(100) < 5 && sc.Style != "none" { // none has no page size in its walk
			resc := sc
			resc.Size = 5 + rrng.Intn(46)
			writeJob(t, dir, "job.yaml", modelJob(resc, srv.URL, tgt.url, tgt.table, initial))
			respecced = true
			t.Logf("the job file now asks for pages of %d", resc.Size)
		}
		args, kill := modelStep(rng, api, job)
		if restartNext {
			args, kill, restartNext = []string{"run", "--restart", job}, nil, false
		}
		switch did, how := ops.between(t, start, guard); did {
		case "":
		case "the state file put back from its copy":
			// The state's unfinished run, if any, began no earlier than
			// the copy: the run's start and the sweep guard's go back to
			// then. Its previous proving pass is the copy's: a record gone
			// since may be only pending at the next pass, and goes at the
			// one after (docs/deletions.md, "Two passes").
			start, guard.from, pendingGone = ops.state.start, ops.state.from, nil
			sum.op(did)
			t.Logf("%s %s", did, how)
		default:
			sum.op(did)
			t.Logf("%s %s", did, how)
		}
		args, sig := ops.invocation(args, kill)
		for _, f := range []string{"--verify", "--full"} {
			if slices.Contains(args, f) {
				sum.op(f)
			}
		}
		if len(args) > 1 && args[1] == "--restart" {
			start = api.Snapshot()
		}
		var ex modelExit
		var pairStart *map[int]fakeapi.ModelRecord
		var pairPres *fakeapi.Presence
		// (Not while a key swap is on: the second invocation could start
		// the next pass in the swap, which would then span two passes.)
		if rng.Intn(100) < 8 && !hh.swapped {
			// Two invocations at once, as overlapping cron entries start:
			// one holds the job, the other exits 4 at once or, started
			// after the first ended, runs in turn. Both exits are checked.
			var other modelExit
			pre, prePres := api.Snapshot(), api.Presence()
			var wg gosync.WaitGroup
			wg.Add(1)
			go func() { defer wg.Done(); other = modelInvoke(t, dir, nil, "run", job, "--if-running", "fail") }()
			ex = modelInvoke(t, dir, kill, args...)
			wg.Wait()
			ops.invoked(args)
			ops.invoked([]string{"run", job}) // which ran is unknown: not a verify run
			if other.code != 4 {
				ex, other = other, ex // check the one that ran, the busy one below
			}
			if other.code != 4 {
				// Both ran, one after the other, in an order the harness
				// cannot see: the one not checked may have started the
				// next run before the checked one's exit. That run's
				// start is then no later than the pair's.
				t.Logf("overlapping %v: both ran (exits %d, %d)", args, ex.code, other.code)
				pairStart, pairPres = &pre, &prePres
			}
			sum.exit(other.code, other.partial)
			if walkRefusal(other) {
				restartNext = true
			} else if other.code != 4 && other.code != 0 && other.code != 3 && other.code != 5 && other.code != -1 && !hh.refused(t, other) &&
				!(other.code == 1 && modelRefusal(other.stderr)) {
				fail("overlapping %v exited %d: %s", args, other.code, modelLastLine(other.stderr))
				return
			}
		} else {
			var signalled bool
			var diedOf string
			ex, signalled, diedOf = modelInvokeSig(t, dir, api, kill, sig, args...)
			ops.invoked(args)
			if diedOf != "" {
				fail("after %v the process died of %s instead of exiting 130 (docs/operations.md, Signals)\n%s", args, diedOf, ex.stderr)
				return
			}
			if signalled {
				sum.op(fmt.Sprintf("signal %s (exit %d)", sig.sig, ex.code))
				if ex.code == 130 && !strings.Contains(ex.stdout, `"status":"interrupted"`) {
					fail("after %v stopped by %s: exit 130 without status interrupted: %s", args, sig.sig, ex.stdout)
					return
				}
				if ex.code != 130 && strings.Contains(ex.stderr, "context canceled") {
					fail("after %v stopped by %s: exit %d for the signal: %s", args, sig.sig, ex.code, modelLastLine(ex.stderr))
					return
				}
			}
		}
		sum.exit(ex.code, ex.partial)
		exits[ex.code]++
		table, dups := tgt.read(t, dir)
		if dups > 0 {
			fail("after %v (exit %d): %d duplicate keys", args, ex.code, dups)
			return
		}
		if bad := guard.check(table); len(bad) > 0 {
			fail("after %v (exit %d) a sweep broke its invariant: %d rows, e.g. %s\n%s", args, ex.code, len(bad), strings.Join(bad[:min(5, len(bad))], "; "), ex.stderr)
			return
		}
		if !(ex.code == 0 && !ex.partial) && !ops.passedUnknown(t) {
			if bad := modelPassed(t, api, dir, table); len(bad) > 0 {
				fail("after %v (exit %d) the checkpoint passed rows not in the table: %s", args, ex.code, strings.Join(bad[:min(5, len(bad))], "; "))
				return
			}
		}
		switch {
		case ex.code == 0 && !ex.partial:
			end := api.Snapshot()
			// A pass served under other keys (keyswap) cannot equal the
			// source: only the sweep invariant above is claimed for it.
			lied := hh.swapped
			exempt := ops.completed(args, start, lied)
			if bad := filterEdits(hh.filterLoose(modelMissing(start, end, table)), exempt); !lied && len(bad) > 0 {
				fail("exit 0 over a hole after %v (completed run %d): %d of %d records wrong, e.g. %s\n%s", args, completed+1, len(bad), len(start), strings.Join(bad[:min(5, len(bad))], "; "), ex.stderr)
				return
			}
			claimed := sc.FullPasses() && sc.Deletes != "keep" && claimSwept && pairStart == nil && !lied
			if lied {
				// The swapped pass missed every live row: the pass after
				// it lists them again, finds its previous pass no picture
				// of the source and removes nothing; the one after that
				// removes (docs/deletions.md, "Two passes").
				pendingGone = nil
			}
			if claimed && strings.Contains(ex.stdout, `"sweep":"skipped"`) {
				// The pass could not prove its records absent (a walk
				// shifted by the appends, docs/deletions.md): it deleted
				// nothing. known keeps the records deleted before it, for
				// the next full pass that proves.
				sum.skippedSweep()
			} else if claimed {
				// A pass that says it removes nothing (its previous pass,
				// or itself, no picture of the source; the previous pass's
				// keys not all recorded) leaves every row it missed pending,
				// and the next pass pairs with it: it owes no removal
				// (docs/deletions.md, "Two passes").
				if pendingGone != nil && !strings.Contains(ex.stderr, "this full pass removes nothing") {
					if bad := modelSwept(sc.Deletes, pendingGone, start, end, table); len(bad) > 0 {
						fail("exit 0 of the second full pass after %v (completed run %d) left rows of records deleted before the first: %d, e.g. %s\n%s", args, completed+1, len(bad), strings.Join(bad[:min(5, len(bad))], "; "), ex.stderr)
						return
					}
					sum.swept(modelAbsent(pendingGone, start, end))
				}
				pendingGone = map[int]bool{}
				forgotten := ops.takeForgotten()
				for id := range known {
					if forgotten[id] {
						continue
					}
					if _, ok := start[id]; !ok {
						if _, ok := end[id]; !ok {
							pendingGone[id] = true
						}
					}
				}
			}
			if sc.Has("future") {
				hwm := statusOf(t, dir, job).HWM
				if at, err := time.Parse(time.RFC3339Nano, hwm); err == nil && at.After(time.Now().Add(time.Hour)) {
					fail("after %v (completed run %d) the saved mark %s is a future record's", args, completed+1, hwm)
					return
				}
			}
			// A second completed run proves what the first one left for it
			// (a saved mark, a checkpoint) holds no hole either.
			if completed++; completed >= hh.completions()+ops.extraCompletion() {
				return
			}
			if pairPres != nil {
				guard.passEnded(*pairPres)
			} else {
				guard.passEnded(api.Presence())
			}
			for _, id := range hh.afterCompleted(t, claimed) {
				delete(pendingGone, id) // back at the source: no longer owed a removal
			}
			for id := range end {
				known[id] = true
			}
			// The source loses a few records between the runs: the next
			// full pass must sweep them (and those the walk's own deletes
			// removed).
			if pairStart == nil && len(end) > 3 {
				var ids []int
				for id := range end {
					ids = append(ids, id)
				}
				sort.Ints(ids)
				drng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
				ids = ids[:1+drng.Intn(3)]
				api.Delete(ids...)
				hh.deletedB = ids
			}
			claimSwept = pairStart == nil
			start = api.Snapshot()
			if pairStart != nil {
				start = *pairStart
			}
		case ex.code == 0, ex.code == -1, ex.code == 3, ex.code == 4, ex.code == 130:
		case ex.code == 5 && args[0] == "resume":
		case walkRefusal(ex):
			restartNext = true
		case ex.code == 1 && modelRefusal(ex.stderr):
			sum.mu.Lock()
			sum.refused++
			sum.mu.Unlock()
			refusals++
			t.Logf("refused: %s", modelLastLine(ex.stderr))
			if refusals >= 2 {
				return
			}
		case hh.refused(t, ex):
			refusals++
			if hh.stopped || refusals >= 6 {
				return
			}
		default:
			fail("unexpected exit %d after %v: %s\n%s", ex.code, args, modelLastLine(ex.stderr), ex.stderr)
			return
		}
	}
	// Progress: a binary that never completes (every run exit 3, say)
	// must not pass. Every fault a scenario injects is bounded (retries
	// outlast transient faults, mutations and hostile faults stop after a
	// budget), so a seed whose runs were neither refused nor completed in
	// the step budget made no progress.
	if completed == 0 && refusals == 0 {
		fail("no progress: no run completed in %d invocations (exits %v)", steps, exits)
		return
	}
	t.Logf("step budget spent after %d completed runs", completed)
}

// modelStep picks the next invocation and, for a kill, when to kill it.
func modelStep(rng *rand.Rand, api *fakeapi.ModelAPI, job string) ([]string, func() bool) {
	switch n := rng.Intn(100); {
	case n < 40:
		return []string{"run", job}, nil
	case n < 60:
		deadline := time.Now().Add(time.Duration(5+rng.Intn(60)) * time.Millisecond)
		return []string{"run", job}, func() bool { return time.Now().After(deadline) }
	case n < 75:
		at := api.Requests() + 1 + rng.Intn(4)
		return []string{"run", job}, func() bool { return api.Requests() >= at }
	case n < 85:
		return []string{"run", job, "--max-pages", fmt.Sprint(1 + rng.Intn(3))}, nil
	case n < 90:
		return []string{"run", job, "--time-limit", fmt.Sprintf("%dms", 20+rng.Intn(100))}, nil
	case n < 96:
		return []string{"resume", job}, nil
	default:
		return []string{"run", "--restart", job}, nil
	}
}

// modelRefusal reports whether a failure names a contradiction idemsync
// detected (docs/guarantees.md: refusing is the desired behaviour), or an hwm
// walk that cannot progress: more records share one mark than a page holds
// (docs/pagination.md, "hwm"), which idemsync sees as a full page making no
// progress or, at the next mark, as the same page again (seed 5477: a record
// updated on every response, marks in whole seconds).
func modelRefusal(stderr string) bool {
	s := strings.ToLower(stderr)
	return strings.Contains(s, "contradict") || strings.Contains(s, "says the list goes on") || strings.Contains(s, "cap") || strings.Contains(s, "made no progress") ||
		strings.Contains(s, "page at mark") && strings.Contains(s, "repeats the previous page")
}

// modelLastLine returns the last error line of stderr, else its last line.
func modelLastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], "ERROR") || strings.HasPrefix(lines[i], "Error") || strings.HasPrefix(lines[i], "error") {
			return lines[i]
		}
	}
	return lines[len(lines)-1]
}

// modelPassed lists the ids the checkpoint passed that the table lacks: for
// every page the unfinished run committed, the ids that every response the
// API served at that position contained (fakeapi.ModelAPI.ServedEverywhere).
func modelPassed(t *testing.T, api *fakeapi.ModelAPI, dir string, table map[int]modelRow) []string {
	var bad []string
	for _, raw := range modelCommitted(t, dir) {
		pos := modelPosition(raw)
		ids, ok := api.ServedEverywhere(pos)
		for _, alt := range []string{"", "0", "1"} { // a first page may omit its parameter
			if !ok && (pos == "" || pos == "0" || pos == "1") {
				ids, ok = api.ServedEverywhere(alt)
			}
		}
		if !ok {
			t.Errorf("committed position %q (%s) was never served: the harness cannot map it", pos, raw)
			continue
		}
		for _, id := range ids {
			if _, ok := table[id]; !ok {
				bad = append(bad, fmt.Sprintf("position %q: id %d", pos, id))
			}
		}
	}
	return bad
}

// modelPosition turns a state-file position (the style's own position
// under "at": {"page":2}, {"offset":40}, {"cursor":"7"}, {"mark":"..."},
// {"url":"...?cursor=7"}, {}; docs/architecture.md, "Positions") into the
// value of the request parameter the fake API keyed its responses by.
func modelPosition(raw string) string {
	var m map[string]any
	if json.Unmarshal([]byte(raw), &m) != nil {
		return raw
	}
	if at, ok := m["at"].(map[string]any); ok {
		m = at
	}
	str := func(v any) string {
		if f, ok := v.(float64); ok {
			return strconv.FormatInt(int64(f), 10)
		}
		return fmt.Sprint(v)
	}
	if p, ok := m["page"]; ok {
		if size, ok := m["size"]; ok { // a page asked at the size the API serves
			return str(p) + "@" + str(size)
		}
		return str(p)
	}
	for _, k := range []string{"offset", "cursor", "mark"} {
		if v, ok := m[k]; ok {
			return str(v)
		}
	}
	if v, ok := m["url"]; ok {
		if u, err := url.Parse(str(v)); err == nil {
			return u.Query().Get("cursor")
		}
	}
	return ""
}
