package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// prune --keep 0s against passes that sweep: between every invocation of
// a pass spread over many (--max-pages 1), and while the last one is held
// at its sweep (the previous proving pass already chosen, its keys not
// yet read), on a state file and on a state in PostgreSQL. prune keeps
// the last proving pass and every full pass after it with their keys
// (docs/deletions.md, "Where the pending set lives"), and never touches an
// unfinished run: the second pass to miss record 25 removes it, nothing
// else goes, and a row whose record was deleted and re-created between
// two invocations, before or after the page that holds it, stays live.
func TestSweepPrunedMidPass(t *testing.T) {
	type stateKind struct{ name string }
	states := []stateKind{{name: "file"}}
	if pg := os.Getenv("IDEMSYNC_TEST_POSTGRES_URL"); pg != "" {
		states = append(states, stateKind{name: "pg"})
	}
	// The state kinds, and each mode's two targets, share nothing (their own
	// folders, state files or schemas, APIs) and wait on the binary:
	// they run at once.
	for _, st := range states {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			if st.name == "file" {
				skipWithPostgresState(t, "this subtest names its own state file; the pg subtest covers a state in PostgreSQL")
			} else {
				skipOwnPostgresState(t)
			}
			eachDelTarget(t, []string{"hard", "soft"}, func(t *testing.T, dir, mode string, tg delTarget) {
				t.Parallel()
				var env []string
				top := "state: " + tg.name + ".db\n"
				if st.name == "pg" {
					pg := os.Getenv("IDEMSYNC_TEST_POSTGRES_URL")
					env = []string{"IDEMSYNC_STATE=" + pgStateURL(t, pg, freshSchema(t, pg), "30s")}
					top = ""
				}
				sweepPruned(t, dir, env, top, mode, tg)
			})
		})
	}
}

func sweepPruned(t *testing.T, dir string, env []string, top, mode string, tg delTarget) {
	api := newDelAPI(t, 30)
	job := writeJob(t, dir, tg.name+".yaml", withTotal(delJob(api.URL, tg, mode, "", top)))
	run := func(args ...string) result {
		t.Helper()
		r := idemsync(t, dir, env, append(append([]string{}, args...), "--json")...)
		if r.code != 0 {
			t.Fatalf("idemsync %v: exit %d\nstdout: %s\nstderr: %s", args, r.code, r.stdout, r.stderr)
		}
		return r
	}
	prune := func(what string) {
		t.Helper()
		if r := idemsync(t, dir, env, "prune", job, "--keep", "0s"); r.code != 0 {
			t.Fatalf("prune --keep 0s %s: exit %d: %s", what, r.code, r.stderr)
		}
	}
	// check fails when a row live before an invocation, of a record live
	// at the source, is gone or marked after it.
	check := func(what string, before map[int]*string) {
		t.Helper()
		after := tg.rows(t)
		for id := range api.live() {
			if m, was := before[id]; was && m == nil {
				if m, ok := after[id]; !ok || m != nil {
					t.Fatalf("%s: the row of live record %d was removed or marked", what, id)
				}
			}
		}
	}
	// A pass of 3 pages run one page per invocation, prune between them;
	// between pages, act(page already read) changes the source.
	pass := func(name string, act func(read int)) result {
		t.Helper()
		var r result
		for read := 1; ; read++ {
			before := tg.rows(t)
			r = run("run", job, "--max-pages", "1")
			var v struct{ Status string }
			_ = json.Unmarshal([]byte(r.stdout), &v)
			check(fmt.Sprintf("%s, after invocation %d", name, read), before)
			if v.Status != "partial" {
				if read != 3 {
					t.Fatalf("%s ended after %d invocations, want 3: %s", name, read, r.stdout)
				}
				return r
			}
			prune(fmt.Sprintf("%s, after invocation %d", name, read))
			if act != nil {
				act(read)
			}
		}
	}

	counts := func(r result, deleted, pending int64) {
		t.Helper()
		if d, p := deletedOf(t, r), pendingOf(t, r); d != deleted || p != pending {
			t.Fatalf("deleted %d, pending %d; want %d and %d\n%s", d, p, deleted, pending, r.stdout)
		}
	}
	counts(pass("first pass", nil), 0, 0)
	prune("after the first pass")
	api.remove(25)
	// 5 (page 1, read) deleted and re-created after its page; 15 (page 2)
	// deleted and re-created before its page is read.
	r := pass("second pass", func(read int) {
		if read == 1 {
			api.remove(5, 15)
			api.set(5, "again", false)
			api.set(15, "again", false)
		}
	})
	counts(r, 0, 1) // 25: the first pass to miss it keeps it
	prune("after the second pass")

	// The third pass, its last invocation held at its sweep while prune
	// runs.
	for read := 1; read <= 2; read++ {
		run("run", job, "--max-pages", "1")
		prune(fmt.Sprintf("third pass, after invocation %d", read))
	}
	steps, hold := filepath.Join(dir, tg.name+"-steps.log"), filepath.Join(dir, tg.name+"-hold")
	stateEnv := env
	if top != "" {
		stateEnv = nil // the job file names its state file
	}
	_, errOut, done := startIdemsync(t, dir, append(stateEnv, "IDEMSYNC_TEST_FAILPOINT=sweep",
		"IDEMSYNC_TEST_FAILPOINT_HOLD="+hold, "IDEMSYNC_TEST_STEP_LOG="+steps), "run", job, "--json")
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(steps)
		if strings.Contains(string(b), "\nsweep ") || strings.HasPrefix(string(b), "sweep ") {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the third pass ended before its sweep: exit %d: %s", exitCode(err), errOut)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the third pass never reached its sweep: %s", errOut)
		}
		time.Sleep(5 * time.Millisecond)
	}
	prune("while the third pass is held at its sweep")
	if err := os.WriteFile(hold, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if code := exitCode(err); code != 0 {
			t.Fatalf("the third pass, after prune at its sweep: exit %d: %s", code, errOut)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the third pass did not end: %s", errOut)
	}
	sameIDs(t, "after the third pass (prune at its sweep)", liveIDs(tg.rows(t)), api.live())
	if rows := tg.rows(t); mode == "hard" && len(rows) != 29 || mode == "soft" && (len(rows) != 30 || rows[25] == nil) {
		t.Fatalf("after the third pass: %d rows (25: %v), want 25 removed (hard) or marked (soft)", len(rows), rows[25])
	}
	prune("after the third pass")
	counts(run("run", job), 0, 0)
	sameIDs(t, "after a fourth pass", liveIDs(tg.rows(t)), api.live())
}
