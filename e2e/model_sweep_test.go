package e2e

import (
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// modelHostile is the set of hostile kinds -model-hostile enables
// (fakeapi.HostileKinds; "all" for every one). None by default: each kind
// is switched on once idemsync survives it (docs/fault-tolerance.md).
func modelHostile() map[string]bool {
	on := map[string]bool{}
	for _, k := range strings.Split(*modelHostileFlag, ",") {
		switch k = strings.TrimSpace(k); k {
		case "":
		case "all":
			for _, h := range append(append([]string{}, fakeapi.HostileKinds...), fanoutHostileKinds...) {
				on[h] = true
			}
		default:
			on[k] = true
		}
	}
	return on
}

// checkHostileKinds fails the test on a kind -model-hostile names that
// does not exist (a typo would silently test nothing).
func checkHostileKinds(t *testing.T) {
	t.Helper()
	for k := range modelHostile() {
		if !slices.Contains(fakeapi.HostileKinds, k) && !slices.Contains(fanoutHostileKinds, k) {
			t.Fatalf("-model-hostile: no hostile kind %q (kinds: %s, %s, or all)", k, strings.Join(fakeapi.HostileKinds, ","), strings.Join(fanoutHostileKinds, ","))
		}
	}
}

// sweepGuard checks the invariant of sweeps after every exit, whatever its
// code (docs/fault-tolerance.md, "The sweep invariant"):
//
//	A sweep (hard or soft) may remove or mark the row of key K only if K
//	was absent from the source's data set at some moment during the pass
//	that removed or marked it.
//
// The data set is what the source holds, not what it served: an API that
// serves its records under other keys, omits one from a page, or answers
// an error as an empty page has not lost them. The harness does not see
// where a pass begins (a pass may span several invocations), so it checks
// a weaker, never falsely failing, form: a row live (present and unmarked)
// at one observation and removed or marked at the next is legal only if
// its key was absent at some moment between the start of the first
// invocation after the last completed run (no pass that sweeps now can
// have begun earlier) and the observation.
type sweepGuard struct {
	api  *fakeapi.ModelAPI
	from fakeapi.Presence // the data set when the current pass may have begun at the earliest
	prev map[int]modelRow // the table at the last observation
}

func newSweepGuard(api *fakeapi.ModelAPI) *sweepGuard {
	return &sweepGuard{api: api, from: api.Presence(), prev: map[int]modelRow{}}
}

// check compares the table with the last observation and lists every row
// removed or marked against the invariant.
func (g *sweepGuard) check(table map[int]modelRow) []string {
	var bad []string
	for id, was := range g.prev {
		if was.deleted {
			continue
		}
		if now, ok := table[id]; ok && !now.deleted {
			continue
		}
		if !g.api.AbsentSince(g.from, id) {
			how := "deleted"
			if _, ok := table[id]; ok {
				how = "marked deleted"
			}
			bad = append(bad, fmt.Sprintf("id %d %s while its record was at the source throughout the pass", id, how))
		}
	}
	sort.Strings(bad)
	g.prev = table
	return bad
}

// passEnded records that a pass completed: the next one begins no earlier
// than p.
func (g *sweepGuard) passEnded(p fakeapi.Presence) { g.from = p }

// modelHostileHarness is the harness's side of the hostile kinds: the key
// swap it turns on between passes, the records it restores with lower
// versions, and the second job of a shared table.
type modelHostileHarness struct {
	sc       fakeapi.Scenario
	api      *fakeapi.ModelAPI
	rng      *rand.Rand
	swapped  bool
	swaps    int
	loose    map[int]bool // restored with a lower or null version: the version rule decides their content
	other    string       // the second job file (sharedtable), "" when none or refused
	stopped  bool         // the model job was refused for good (exit 2): no progress to claim
	deletedB []int        // ids the harness deleted after the last completed run
}

func newModelHostileHarness(t *testing.T, sc fakeapi.Scenario, api *fakeapi.ModelAPI, dir, apiURL string, tgt modelTarget) *modelHostileHarness {
	h := &modelHostileHarness{sc: sc, api: api, rng: rand.New(rand.NewSource(sc.Seed ^ 0x68617273)), loose: map[int]bool{}}
	if sc.IsHostile("sharedtable") {
		h.other = writeJob(t, dir, "other.yaml", modelOtherJob(sc, apiURL, tgt.url, tgt.table))
	}
	return h
}

// completions is how many completed runs a seed goes through: two, three
// when its full passes sweep (a record deleted at the source goes at the
// second proving pass that misses it: docs/deletions.md, "Two passes"),
// or five with hostile kinds (a swap, a sweep and a restore each need a
// pass of their own).
func (h *modelHostileHarness) completions() int {
	switch {
	case len(h.sc.Hostiles) > 0:
		return 5
	case h.sc.FullPasses() && h.sc.Deletes != "keep":
		return 3
	}
	return 2
}

// afterCompleted acts between two passes, after a completed run: it ends
// a key swap, restores the records the run swept with lower or null
// versions (versionback), and may start a swap for the next pass. It
// returns the ids it restored.
func (h *modelHostileHarness) afterCompleted(t *testing.T, claimed bool) (restored []int) {
	ended := h.swapped
	if h.swapped {
		h.api.SetSwap(false)
		h.swapped = false
		t.Logf("keyswap: the API serves its own keys again")
	}
	if h.sc.IsHostile("versionback") && claimed && len(h.deletedB) > 0 {
		null := h.rng.Intn(2) == 0
		h.api.Restore(null, h.deletedB...)
		for _, id := range h.deletedB {
			h.loose[id] = true
		}
		t.Logf("versionback: ids %v back with version %s", h.deletedB, map[bool]string{true: "null", false: "1"}[null])
		restored = h.deletedB
	}
	h.deletedB = nil
	// A swap lasts one pass and never follows another at once: a glitch
	// that spans two consecutive proving passes is what a real deletion
	// looks like, and only max_delete_ratio guards against it (0.9 in the
	// model job: docs/deletions.md, Limits).
	if h.sc.IsHostile("keyswap") && h.swaps < 2 && !ended && h.rng.Intn(2) == 0 {
		h.api.SetSwap(true)
		h.swapped = true
		h.swaps++
		t.Logf("keyswap: the next pass is served under ids+%d", fakeapi.SwapOffset)
	}
	return restored
}

// refused ends a key swap after a sweep refused for good (the pass is
// over) and reports whether a failure with this code is one the hostile
// kinds may cause: exit 1 for an error the source answered (shift,
// nullerror, gqlerrors, a refused mass change), exit 2 for a second writer
// refused (sharedtable).
func (h *modelHostileHarness) refused(t *testing.T, e modelExit) bool {
	ok := false
	switch e.code {
	case 1:
		ok = len(h.sc.Hostiles) > 0
	case 2:
		ok = h.sc.IsHostile("sharedtable")
		h.stopped = ok
	}
	if ok {
		t.Logf("hostile: exit %d: %s", e.code, modelLastLine(e.stderr))
		// Only a refused sweep ends its pass for good; any other exit 1
		// leaves the run unfinished, and the run that continues it must
		// read the rest of the pass in the swap too (seed 119: a swap
		// ended there made one pass half swapped, its exit 0 claimed).
		if h.swapped && strings.Contains(e.stderr, "> max_delete_ratio") {
			h.api.SetSwap(false)
			h.swapped = false
		}
	}
	return ok
}

// runOther runs the shared table's second job now and then; it returns its
// exit and whether it ran. A refusal (exit 2, or the mass-delete guard)
// is what a fixed idemsync answers; the second job is not run again after
// an exit 2.
func (h *modelHostileHarness) runOther(t *testing.T, dir string) (modelExit, bool) {
	if h.other == "" || h.rng.Intn(3) != 0 {
		return modelExit{}, false
	}
	e := modelInvoke(t, dir, nil, "run", h.other)
	if e.code == 2 {
		t.Logf("sharedtable: the second job refused: %s", modelLastLine(e.stderr))
		h.other = ""
	}
	return e, true
}

// filterLoose drops modelMissing's complaints about the content of records
// restored with a lower or null version (the version rule keeps the stored
// content; only their presence and deletion mark are claimed).
func (h *modelHostileHarness) filterLoose(bad []string) []string {
	var out []string
	for _, b := range bad {
		var id int
		if _, err := fmt.Sscanf(b, "id %d stale", &id); err == nil && h.loose[id] {
			continue
		}
		out = append(out, b)
	}
	return out
}

// modelHostileRepro is the -model-hostile part of a reproduce command.
func modelHostileRepro() string {
	if *modelHostileFlag == "" {
		return ""
	}
	return " -model-hostile=" + *modelHostileFlag
}
