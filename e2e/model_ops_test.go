package e2e

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemsync/idemsync/internal/fakeapi"
	"github.com/jackc/pgx/v5"
)

// The operations the model's schedule adds to runs, kills
// and slices (docs/fault-tolerance.md, "Model test: exit 0 means
// complete"), each drawn with a small probability from a random source of
// its own (so that a seed's runs stay as they were) and each switched off
// by naming it in -model-skip:
//
//   - signal: SIGTERM or SIGINT instead of SIGKILL, now and then a second
//     one (exit 130, docs/operations.md "Signals");
//   - verify: `--verify` on a run or resume;
//   - full: `run --full` on an incremental or hwm job;
//   - restore-target: the SQLite target file copied aside at an exit and
//     copied back later (docs/guarantees.md, "Progress markers");
//   - handedit: a row's value changed in the target between runs (only a
//     verify run, or a rewrite of that row, puts it right:
//     docs/guarantees.md, "run --verify");
//   - restore-state: the state file copied aside and copied back later.

// modelOps is the harness's side of those operations.
type modelOps struct {
	sc   fakeapi.Scenario
	api  *fakeapi.ModelAPI
	tgt  modelTarget
	dir  string
	rng  *rand.Rand
	skip map[string]bool

	invocations int // the model job's invocations so far

	// The current run of the model job (since the last completed one):
	// the invocation it began at, whether every invocation of it ran with
	// --verify, and whether it began as a whole read (--restart, --full).
	runFirst    int
	runVerified bool
	runWhole    bool

	// edits are the rows edited by hand and not yet put right: the
	// record's value at the source when it was edited, and the invocation
	// count then.
	edits map[int]modelEdit

	target *modelTargetCopy // the target copied aside, nil when none
	state  *modelStateCopy  // the state file copied aside, nil when none
	// restoredRun is the state's latest run when the target was restored
	// (-1: none since): its committed pages are no longer in the table,
	// until a run notices the restore and starts a new one.
	restoredRun int64
	// touched: a copy was put back or a row edited; the seed then goes on
	// to one more completed run, which must equal the source.
	touched bool
	// forgotten are the rows written (added, changed, marked) since the
	// state file's copy, when it was put back: runs the put-back state
	// does not know wrote them. Its unfinished run, begun before the
	// copy, then counts as a prior pass only for rows not written since
	// it began (docs/deletions.md, "Two passes"): a row of these missed
	// by the next full pass and the one after may stay pending at the
	// latter. nil when none.
	forgotten map[int]bool
}

// takeForgotten returns the rows written since the put-back state's copy
// (forgotten) and forgets them: they are exempt only from the next full
// pass's owed removals.
func (o *modelOps) takeForgotten() map[int]bool {
	f := o.forgotten
	o.forgotten = nil
	return f
}

// extraCompletion is the completed runs a seed adds for the operations:
// one when a copy was put back or a row edited.
func (o *modelOps) extraCompletion() int {
	if o.touched {
		return 1
	}
	return 0
}

type modelEdit struct {
	srcV string
	at   int
}

type modelTargetCopy struct {
	files map[string][]byte // file name (out.db, out.db-wal) to its bytes
	edits map[int]modelEdit
	at    int // the invocations when copied
}

type modelStateCopy struct {
	files map[string][]byte
	start map[int]fakeapi.ModelRecord // the harness's start when copied
	from  fakeapi.Presence            // the sweep guard's when copied
	table map[int]modelRow            // the target's rows when copied
	at    int                         // the invocations when copied
	// behind: the state's run may claim pages the target lacks: a target
	// copied before it was put back since, or a target was put back
	// before the copy and no new run had started by then (restoredRun).
	behind bool
}

func newModelOps(sc fakeapi.Scenario, api *fakeapi.ModelAPI, tgt modelTarget, dir string, skip map[string]bool) *modelOps {
	return &modelOps{sc: sc, api: api, tgt: tgt, dir: dir, rng: rand.New(rand.NewSource(sc.Seed ^ 0x6f707321)),
		skip: skip, edits: map[int]modelEdit{}, restoredRun: -1, runVerified: true}
}

func (o *modelOps) on(kind string) bool { return !o.skip[kind] }

// invocation turns the schedule's next invocation into one of the new
// kinds now and then: a kill becomes a SIGTERM or SIGINT (sig, with a
// second one after second when second >= 0), a run or resume gains
// --verify, a run of an incremental or hwm job --full.
func (o *modelOps) invocation(args []string, kill func() bool) ([]string, modelSignal) {
	sig := modelSignal{sig: syscall.SIGKILL, second: -1}
	n := o.rng.Intn(100)
	if kill != nil && n < 35 && o.on("signal") {
		sig.sig = []syscall.Signal{syscall.SIGTERM, syscall.SIGINT}[o.rng.Intn(2)]
		if o.rng.Intn(3) == 0 {
			sig.second = time.Duration(o.rng.Intn(15)) * time.Millisecond
		}
	}
	if (args[0] == "run" || args[0] == "resume") && o.rng.Intn(100) < 8 && o.on("verify") {
		args = append(slices.Clone(args), "--verify")
	}
	if args[0] == "run" && !slices.Contains(args, "--restart") && (o.sc.Has("incremental") || o.sc.Style == "hwm") &&
		o.rng.Intn(100) < 6 && o.on("full") {
		args = append(slices.Clone(args), "--full")
	}
	return args, sig
}

// between acts between two invocations: copies the target or the state
// file aside, puts a copy back, or edits a row by hand. It returns what it
// did ("" for nothing) and, for a log, how.
func (o *modelOps) between(t *testing.T, start map[int]fakeapi.ModelRecord, guard *sweepGuard) (string, string) {
	n := o.rng.Intn(100)
	sqliteTarget := o.tgt.url == "sqlite:out.db"
	switch {
	case o.target != nil && n < 30:
		modelPutFiles(t, filepath.Join(o.dir, "out.db"), o.target.files)
		o.edits = maps.Clone(o.target.edits)
		if o.state != nil && o.target.at <= o.state.at {
			o.state.behind = true
		}
		o.target = nil
		o.restoredRun = modelLatestRun(t, o.dir)
		table, _ := o.tgt.read(t, o.dir)
		guard.prev = table // rows the copy lacks were not swept
		o.touched = true
		return "the target put back from its copy", ""
	case o.state != nil && n >= 30 && n < 60:
		modelPutFiles(t, filepath.Join(o.dir, ".idemsync", "state.db"), o.state.files)
		if o.state.behind {
			// A target put back from an older copy than this state's:
			// the run the state holds may have committed pages the
			// target lacks, until a run notices the target behind and
			// starts a new one (docs/guarantees.md, "Progress markers").
			o.restoredRun = modelLatestRun(t, o.dir)
		}
		table, _ := o.tgt.read(t, o.dir)
		o.forgotten = map[int]bool{}
		for id, r := range table {
			if was, ok := o.state.table[id]; !ok || was != r {
				o.forgotten[id] = true
			}
		}
		o.touched = true
		return "the state file put back from its copy", ""
	}
	switch n = o.rng.Intn(100); {
	case n < 5 && sqliteTarget && o.on("restore-target"):
		o.target = &modelTargetCopy{files: modelCopyFiles(t, filepath.Join(o.dir, "out.db")), edits: maps.Clone(o.edits), at: o.invocations}
		return "the target copied aside", ""
	case n < 10 && !pgState() && o.on("restore-state"):
		table, _ := o.tgt.read(t, o.dir)
		o.state = &modelStateCopy{files: modelCopyFiles(t, filepath.Join(o.dir, ".idemsync", "state.db")), start: start, from: guard.from, table: table,
			at: o.invocations, behind: o.passedUnknown(t)}
		return "the state file copied aside", ""
	case n < 16 && o.on("handedit"):
		table, _ := o.tgt.read(t, o.dir)
		var ids []int
		for id, r := range table {
			if src, ok := o.api.Snapshot()[id]; ok && !r.deleted && r.v == src.V {
				ids = append(ids, id)
			}
		}
		if len(ids) == 0 {
			return "", ""
		}
		slices.Sort(ids)
		id := ids[o.rng.Intn(len(ids))]
		src := o.api.Snapshot()[id]
		o.tgt.edit(t, o.dir, id, "edited by hand "+fmt.Sprint(o.invocations))
		o.edits[id] = modelEdit{srcV: src.V, at: o.invocations}
		o.touched = true
		return "a row edited by hand", fmt.Sprintf("id %d", id)
	}
	return "", ""
}

// invoked records one invocation of the model job that ran (not one that
// exited 4 at once).
func (o *modelOps) invoked(args []string) {
	o.invocations++
	verify := slices.Contains(args, "--verify")
	if slices.Contains(args, "--restart") {
		// A new run from the beginning.
		o.runFirst, o.runVerified, o.runWhole = o.invocations, verify, true
		return
	}
	if !verify {
		o.runVerified = false
	}
}

// completed is told of a completed run: it returns the edited ids the run
// is not held to (modelMissing's complaints about them are dropped), and
// forgets the edits the run put right. lied: the pass was served under
// other keys (keyswap).
func (o *modelOps) completed(args []string, start map[int]fakeapi.ModelRecord, lied bool) map[int]bool {
	// A verify run reads every row of a non-incremental job; of an
	// incremental or hwm job only those it read, all of them when it began
	// from the beginning (docs/guarantees.md, "run --verify"). A pass
	// served under other keys (keyswap) or omitting records (shift) did
	// not read them all: it verified what it read only (seed 7054 of
	// TestModelHostile: a verify pass in a key swap).
	whole := (o.sc.FullPasses() || o.runWhole || slices.Contains(args, "--full")) && !lied && !o.sc.IsHostile("shift")
	exempt := map[int]bool{}
	for id, e := range o.edits {
		s, ok := start[id]
		switch {
		case o.runVerified && whole && e.at < o.runFirst:
			delete(o.edits, id) // verified: claimed equal, and equal from now on
		case ok && s.V != e.srcV:
			delete(o.edits, id) // changed at the source since the edit: rewritten
		default:
			exempt[id] = true // a normal run trusts the row's hash and leaves it
		}
	}
	o.runFirst, o.runVerified, o.runWhole = o.invocations+1, true, false
	return exempt
}

// passedUnknown reports whether the state's latest run is the one the
// target was restored under: its committed pages may be missing from the
// table until the next invocation notices and starts over.
func (o *modelOps) passedUnknown(t *testing.T) bool {
	if o.restoredRun < 0 {
		return false
	}
	if modelLatestRun(t, o.dir) == o.restoredRun {
		return true
	}
	o.restoredRun = -1
	return false
}

// filterEdits drops modelMissing's complaints about the rows exempt lists.
func filterEdits(bad []string, exempt map[int]bool) []string {
	var out []string
	for _, b := range bad {
		var id int
		if _, err := fmt.Sscanf(b, "id %d stale", &id); err == nil && exempt[id] {
			continue
		}
		out = append(out, b)
	}
	return out
}

// modelLatestRun is the id of the model job's latest run in the state (0
// when none).
func modelLatestRun(t *testing.T, dir string) int64 {
	t.Helper()
	db := stateDB(t, dir)
	if db == nil {
		return 0
	}
	defer db.Close()
	var id *int64
	if err := db.QueryRow(`SELECT max(id) FROM runs WHERE job = 'model'`).Scan(&id); err != nil {
		if noStateYet(err) {
			return 0
		}
		t.Fatalf("read state: %v", err)
	}
	if id == nil {
		return 0
	}
	return *id
}

// modelCopyFiles reads a SQLite file and its -wal (absent ones are left
// out: the copy of a file that does not exist yet is none).
func modelCopyFiles(t *testing.T, path string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(path + suffix)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(path)+suffix] = b
	}
	return out
}

// modelPutFiles puts a copy back over path, as a restore from a backup
// does: the files the copy lacks are removed, its -shm with them.
func modelPutFiles(t *testing.T, path string, files map[string][]byte) {
	t.Helper()
	for _, suffix := range []string{"", "-wal", "-shm"} {
		name := filepath.Base(path) + suffix
		if b, ok := files[name]; ok {
			if err := os.WriteFile(path+suffix+".tmp", b, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(path+suffix+".tmp", path+suffix); err != nil {
				t.Fatal(err)
			}
		} else if err := os.Remove(path + suffix); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
}

// modelSQLiteEdit changes the value of row id of the SQLite target by hand.
func modelSQLiteEdit(t *testing.T, dir string, id int, v string) {
	t.Helper()
	db := openSQLite(t, filepath.Join(dir, "out.db"))
	defer db.Close()
	if _, err := db.Exec(`UPDATE items SET v = ? WHERE id = ?`, v, id); err != nil {
		t.Fatalf("edit the target by hand: %v", err)
	}
}

// modelPostgresEdit changes the value of row id of table by hand.
func modelPostgresEdit(t *testing.T, url, schema string, id int, v string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `UPDATE `+pgx.Identifier{schema, "items"}.Sanitize()+` SET v = $1 WHERE id = $2`, v, id); err != nil {
		t.Fatalf("edit the target by hand: %v", err)
	}
}

// modelSignal is how the harness stops an invocation its kill trigger
// fires for: SIGKILL, or SIGTERM/SIGINT with, when second >= 0, a second
// one that long after the first.
type modelSignal struct {
	sig    syscall.Signal
	second time.Duration
}

// modelInvokeSig is modelInvoke with the stop signal sig. A process that
// died of SIGTERM or SIGINT (rather than exiting 130) after it made a
// request is reported in diedOf: the handler was installed by then.
func modelInvokeSig(t *testing.T, dir string, api *fakeapi.ModelAPI, kill func() bool, sig modelSignal, args ...string) (e modelExit, signalled bool, diedOf string) {
	t.Helper()
	if sig.sig == syscall.SIGKILL || kill == nil {
		return modelInvoke(t, dir, kill, args...), false, ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, binary, append(args, "--json")...)
	c.Dir = dir
	c.Env = testEnv(dir, args...)
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	before := api.Requests()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	var err error
	var sentAt time.Time
	sent := 0
wait:
	for {
		select {
		case err = <-done:
			break wait
		case <-time.After(time.Millisecond):
			switch {
			case sent == 0 && kill():
				if api.Requests() > before {
					signalled = true
				}
				_ = c.Process.Signal(sig.sig)
				sent, sentAt = 1, time.Now()
			case sent == 1 && sig.second >= 0 && time.Since(sentAt) >= sig.second:
				_ = c.Process.Signal(sig.sig)
				sent = 2
			}
		}
	}
	_ = err
	ps := c.ProcessState
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		if signalled {
			diedOf = ws.Signal().String()
		}
		return modelExit{code: -1, stderr: errOut.String(), stdout: out.String()}, signalled, diedOf
	}
	code := ps.ExitCode()
	return modelExit{code: code, partial: strings.Contains(out.String(), `"status":"partial"`), stderr: errOut.String() + out.String(), stdout: out.String()}, signalled, ""
}
