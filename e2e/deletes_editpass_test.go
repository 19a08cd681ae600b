package e2e

import (
	"strings"
	"testing"
)

// A full pass run while the job file said deletes: keep lists record 11,
// which the proving passes before and after it both missed (each walk
// shifted across it: docs/deletions.md, "Two passes"). The keep pass is a
// full pass in between that listed the key, so the row must stay: "any
// sighting in between clears a pending row". A keep pass records no keys,
// so its sighting was lost and the second shifted pass removed (hard) or
// marked (soft) the live row 11 at once.
func TestSweepKeepPassInBetweenSpares(t *testing.T) {
	eachDelTarget(t, []string{"hard", "soft"}, func(t *testing.T, dir, mode string, tg delTarget) {
		api := newDelAPI(t, 35)
		state := "state: " + tg.name + ".db\n"
		path := tg.name + ".yaml"
		job := writeJob(t, dir, path, withTotal(delJob(api.URL, tg, mode, "", state)))
		delPending(t, dir, 0, "run", job) // the first proving pass: saw 1..35
		// A removal before the walk's position balanced by an addition
		// after it pushes 11 back onto page 1, already read.
		shiftAfterPage1 := func(gone, added int) {
			api.mu.Lock()
			api.served = func(a *delAPI, start int) {
				if start == 0 {
					delete(a.recs, gone)
					a.put(added, "new", false)
					a.served = nil
				}
			}
			api.mu.Unlock()
		}
		shiftAfterPage1(5, 36)
		delPending(t, dir, 1, "run", job) // missed 11 (5 was read on page 1)

		keep := writeJob(t, dir, path, withTotal(delJob(api.URL, tg, "keep", "", state)))
		r := delRun(t, dir, 0, "run", keep) // a full pass that lists 11, unchanged
		if strings.Contains(r.stdout, `"pending_deletes"`) {
			t.Fatalf("a keep pass swept: %s", r.stdout)
		}

		job = writeJob(t, dir, path, withTotal(delJob(api.URL, tg, mode, "", state)))
		api.set(-1, "v-1", false) // before the walk: 11 opens page 2
		shiftAfterPage1(6, 37)    // and is pushed back onto page 1 again
		r = delRun(t, dir, 0, "run", job)
		if rows := tg.rows(t); rows[11] != nil || !func() bool { _, ok := rows[11]; return ok }() {
			t.Fatalf("row 11, live at the source and listed by the keep pass between the two passes that missed it, was removed or marked: %s", r.stdout)
		}
		if d := deletedOf(t, r); d != 0 {
			t.Fatalf("the pass after the keep pass deleted %d rows, want 0: %s", d, r.stdout)
		}
		// The next pass sees 11 and removes 5 (missed by the pass before);
		// 6, read by that pass before it went, is pending, and goes with
		// the pass after.
		r = delRun(t, dir, 0, "run", job)
		if d, p := deletedOf(t, r), pendingOf(t, r); d != 1 || p != 1 {
			t.Fatalf("next pass: deleted %d, pending %d; want 1 (id 5) and 1 (id 6): %s", d, p, r.stdout)
		}
		delRun(t, dir, 0, "run", job)
		sameIDs(t, "after two passes that walked without a shift", liveIDs(tg.rows(t)), api.live())
	})
}
