package e2e

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
)

// SIGKILL at every step of a full pass's end (the last page's checkpoint,
// seen keys loaded, rows removed but not committed, sweep committed but
// the run not completed), again and again while the source loses and
// regains records: after every kill each row is either present or
// correctly removed (no row of a live record is ever missing), the next
// run finishes the sweep, and after the pass after it (the second to miss
// a record removes its row) the live rows equal the source; a
// soft mark keeps the time of the sweep that first made it.
func TestDeletesSweepCrashes(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the failpoint's SIGKILL is checked through Unix wait status")
	}
	eachDelTarget(t, []string{"hard", "soft"}, func(t *testing.T, dir, mode string, tg delTarget) {
		// With the state in PostgreSQL every run after a kill
		// waits out the killed holder's lease: 2 rounds.
		rounds := 6
		if pgState() {
			rounds = 2
		}
		kills := sweepCrashes(t, dir, tg, mode, rounds)
		t.Logf("%s %s: %d SIGKILLs during full passes' ends, every state checked", mode, tg.name, kills)
		if kills < 20*rounds/6 {
			t.Fatalf("only %d kills", kills)
		}
	})
}

// sweepCrashes runs rounds of source changes, each followed by kills at
// every step of the pass's end and a run to exit 0; it returns the kills.
func sweepCrashes(t *testing.T, dir string, tg delTarget, mode string, rounds int) int {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(len(tg.name)), 7))
	api := newDelAPI(t, 200)
	state := fmt.Sprintf("state: %s-%s.db\n", tg.name, mode)
	// With the count, a pass whose records fill its last page proves the
	// end too (an empty page after a full one alone would not, and that
	// pass would skip its sweep: docs/deletions.md).
	job := writeJob(t, dir, tg.name+"-"+mode+".yaml", withTotal(delJob(api.URL, tg, mode, "", state)))
	delRun(t, dir, 0, "run", job)
	var removed []delRecord
	kills := 0
	for round := 0; round < rounds; round++ {
		// Lose a few records (not more than the ratio allows), regain some.
		var ids []int
		for id := range api.live() {
			if rng.IntN(100) < 8 {
				ids = append(ids, id)
			}
		}
		removed = append(removed, api.remove(ids...)...)
		if n := len(removed); n > 4 && round%2 == 1 {
			api.restore(removed[:n/2]...)
			removed = removed[n/2:]
		}
		pages := max(1, (len(api.live())+9)/10)
		before := tg.rows(t)
		for _, step := range []string{fmt.Sprintf("checkpoint-committed:%d", pages), "sweep-loaded", "sweep-applied", "swept"} {
			if err := runKilled(t, dir, job, "IDEMSYNC_TEST_FAILPOINT="+step); err != nil {
				t.Fatalf("round %d, %s: %v", round, step, err)
			}
			kills++
			checkSweepState(t, fmt.Sprintf("round %d, after the kill at %s", round, step), tg.rows(t), before, api.live())
		}
		marks := tg.rows(t) // after "swept": the sweep of this round committed
		delRun(t, dir, 0, "run", job)
		// That pass was the first to miss this round's removals: they are
		// pending; the next pass removes them (docs/deletions.md).
		delRun(t, dir, 0, "run", job)
		after := tg.rows(t)
		sameIDs(t, fmt.Sprintf("round %d", round), liveIDs(after), api.live())
		for id, m := range marks {
			if m != nil && (after[id] == nil || *after[id] != *m) {
				t.Fatalf("round %d: the mark of %d moved from %s to %v", round, id, *m, after[id])
			}
		}
		if mode == "hard" && len(after) != len(api.live()) {
			t.Fatalf("round %d: %d rows for %d records", round, len(after), len(api.live()))
		}
	}
	return kills
}

// checkSweepState fails unless every live record's row is present and
// live, and every row was there before or is a live record.
func checkSweepState(t *testing.T, what string, rows, before map[int]*string, live map[int]string) {
	t.Helper()
	for id := range live {
		if m, ok := rows[id]; !ok || m != nil {
			t.Fatalf("%s: the row of live record %d is missing or marked", what, id)
		}
	}
	for id := range rows {
		if _, was := before[id]; !was {
			if _, ok := live[id]; !ok {
				t.Fatalf("%s: row %d appeared from nowhere", what, id)
			}
		}
	}
}
