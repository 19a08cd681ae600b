package e2e

import (
	"os"
	"testing"
)

// A sweep spares the rows written since the previous proving pass began
// (docs/deletions.md, "Two passes"); "since" must not depend on two
// clocks agreeing (docs/deletions.md, "One time line per job"). The
// previous proving pass starts on one clock; a run on another clock (a
// second host sharing the state in PostgreSQL, or the same host after its
// clock was stepped back) writes a record that appeared since; the next
// proving pass misses that record once (a page that left it out, as a
// shifted walk does). The record was missed by one pass only: its row
// stays, pending.
func TestSweepClockSkew(t *testing.T) {
	cases := []struct {
		name string
		// offsets of the clock of the previous proving pass, and of the
		// run that writes the record and of the pass that misses it.
		prior, later string
		pgState      bool
	}{
		// One host, one state file: the clock is stepped back 10 minutes
		// (NTP) after the previous proving pass.
		{name: "stepped", prior: "0s", later: "-10m"},
		// The state in PostgreSQL, runs on two hosts: the previous proving
		// pass ran on a host whose clock is 10 minutes ahead.
		{name: "hosts", prior: "10m", later: "0s", pgState: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			u := os.Getenv("IDEMSYNC_TEST_POSTGRES_URL")
			if c.pgState && u == "" {
				t.Skip("IDEMSYNC_TEST_POSTGRES_URL unset")
			}
			for _, tg := range delTargets(t, dir) {
				t.Run(tg.name, func(t *testing.T) {
					state := "state: " + tg.name + "-state.db\n"
					if c.pgState {
						state = "state: " + u + "&schema=" + freshSchema(t, u) + "\n"
					}
					api := newDelAPI(t, 25) // pages of 10, a short last page: each pass proves
					inc := "incremental:\n  field: updated_at\n  param: updated_since\n  overlap: 1s\n"
					job := writeJob(t, dir, tg.name+".yaml", delJob(api.URL, tg, "hard", "  max_delete_ratio: 1\n", inc+state))
					at := func(offset string) []string { return []string{"IDEMSYNC_TEST_CLOCK_OFFSET=" + offset} }
					run := func(offset string, args ...string) result {
						t.Helper()
						r := idemsync(t, dir, at(offset), append(args, "--json")...)
						if r.code != 0 {
							t.Fatalf("idemsync %v (clock %s): exit %d\nstdout: %s\nstderr: %s", args, offset, r.code, r.stdout, r.stderr)
						}
						return r
					}
					run(c.prior, "run", "--full", job) // a first proving pass
					run(c.prior, "run", "--full", job) // the previous proving pass
					// Record 26 appears; an incremental run on the other
					// clock writes it.
					api.set(26, "v26", false)
					if r := run(c.later, "run", job); !liveIDs(tg.rows(t))[26] {
						t.Fatalf("the incremental run did not write record 26: %s", r.stdout)
					}
					// The next proving pass misses it once.
					api.mu.Lock()
					api.omit = 26
					api.mu.Unlock()
					r := run(c.later, "run", "--full", job)
					if d := deletedOf(t, r); d != 0 || !liveIDs(tg.rows(t))[26] {
						t.Fatalf("a pass that alone missed live record 26 (written after the previous proving pass began, on a clock behind it (%s)) removed %d rows, row 26 live: %v\n%s",
							c.name, d, liveIDs(tg.rows(t))[26], r.stdout)
					}
					if p := pendingOf(t, r); p != 1 {
						t.Fatalf("pending %d after one pass missed record 26, want 1: %s", p, r.stdout)
					}
					// The record is gone for good; the clocks agree again. The
					// row was written on the job's time line, ahead of the
					// pass that left it pending: the pass after that one
					// keeps it pending, the next removes it (a deletion
					// delayed by one pass, not lost).
					r = run(c.prior, "run", "--full", job)
					if d := deletedOf(t, r); d != 0 || !liveIDs(tg.rows(t))[26] {
						t.Fatalf("the pass after a pass on a clock behind removed %d rows, want 0 (row 26 written after that pass began): %s", d, r.stdout)
					}
					r = run(c.prior, "run", "--full", job)
					if d := deletedOf(t, r); d != 1 || liveIDs(tg.rows(t))[26] {
						t.Fatalf("two passes on one clock that both missed record 26 removed %d rows, want 1: %s", d, r.stdout)
					}
				})
			}
		})
	}
}
