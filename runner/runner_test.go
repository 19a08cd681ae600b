package runner

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
	idsync "github.com/idemsync/idemsync/sync"
)

// partialRun leaves an unfinished (partial) run of resource name in the
// state file, as an invocation cut short does.
func partialRun(t *testing.T, f *fakeRuns, name string) {
	t.Helper()
	ctx := context.Background()
	id, err := f.store.StartRun(ctx, &contract.RunInfo{Job: "shop." + name, Kind: contract.KindRun})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.store.FinishRun(ctx, id, contract.RunPartial, "", ""); err != nil {
		t.Fatal(err)
	}
}

// Round one continues the unfinished runs; round two, in file order, runs
// the rest; a child whose parent wrote rows after its run began runs
// again, once, with a new run.
func TestRounds(t *testing.T) {
	f := &fakeRuns{t: t, store: openStore(t), script: map[string][]outcome{"p": {{pages: 2, inserted: 3}}}}
	partialRun(t, f, "c")
	out := run(t, shopFile("p", "c<p", "x"), f, idsync.Options{})
	if got, want := f.names(), []string{"c+", "p", "c", "x"}; !slices.Equal(got, want) {
		t.Errorf("runs %v, want %v", got, want)
	}
	if out.Status != contract.RunCompleted || out.ExitCode != 0 {
		t.Errorf("job %s exit %d: %+v", out.Status, out.ExitCode, out)
	}
	if got := statuses(out); !slices.Equal(got, []string{"p=completed", "c=completed", "x=completed"}) {
		t.Errorf("results %v", got)
	}
	if c := out.Resources[1]; c.Resumed {
		t.Errorf("c is reported with its continued run, not its last one: %+v", c.Result)
	}
}

// --max-pages counts for the whole invocation: each resource gets what is
// left; the one that reaches it ends partial, the next does not run; the
// cycle stays open, so the next invocation continues the partial run,
// runs the rest and reports the resource done in the cycle with its run.
func TestMaxPagesSplit(t *testing.T) {
	f := &fakeRuns{t: t, store: openStore(t), script: map[string][]outcome{"a": {{pages: 3}}, "b": {{pages: 4}}}}
	jf := shopFile("a", "b", "c")
	out := run(t, jf, f, idsync.Options{MaxPages: 5})
	if got := []int{f.calls[0].o.MaxPages, f.calls[1].o.MaxPages}; !slices.Equal(got, []int{5, 2}) {
		t.Errorf("max pages given to a and b: %v, want [5 2]", got)
	}
	if got := statuses(out); !slices.Equal(got, []string{"a=completed", "b=partial", "c=not_run"}) {
		t.Errorf("results %v", got)
	}
	if out.Status != contract.RunPartial || out.ExitCode != 0 || !strings.Contains(out.Resources[2].Error, "--max-pages") {
		t.Errorf("job %s exit %d, c: %q", out.Status, out.ExitCode, out.Resources[2].Error)
	}
	if _, open, err := f.store.Cycle(context.Background(), "shop"); err != nil || !open {
		t.Fatalf("cycle open %v, %v: a partial job leaves it open", open, err)
	}
	aRun := out.Resources[0].RunID

	f.calls = nil
	f.script["b"] = []outcome{{pages: 2}}
	out = run(t, jf, f, idsync.Options{})
	if got, want := f.names(), []string{"b+", "c"}; !slices.Equal(got, want) {
		t.Errorf("second invocation runs %v, want %v", got, want)
	}
	if out.Status != contract.RunCompleted || len(out.Resources) != 3 || out.Resources[0].RunID != aRun {
		t.Errorf("second invocation: %s %v (a's run %d, want %d)", out.Status, statuses(out), out.Resources[0].RunID, aRun)
	}
	if _, open, _ := f.store.Cycle(context.Background(), "shop"); open {
		t.Error("a completed job leaves its cycle open")
	}
}

// --restart opens a new cycle and starts every resource over, the one cut
// short too (not continued), even those the open cycle had synced.
func TestRestart(t *testing.T) {
	f := &fakeRuns{t: t, store: openStore(t), script: map[string][]outcome{"b": {{pages: 3}}}}
	jf := shopFile("a", "b", "c")
	run(t, jf, f, idsync.Options{MaxPages: 2})
	f.calls = nil
	out := run(t, jf, f, idsync.Options{Restart: true})
	if got, want := f.names(), []string{"b", "a", "c"}; !slices.Equal(got, want) {
		t.Errorf("--restart runs %v, want %v (b's unfinished run first, started over)", got, want)
	}
	if out.Status != contract.RunCompleted || out.Resources[1].Resumed {
		t.Errorf("--restart: %s %+v", out.Status, out.Resources)
	}
}

// --time-limit counts from the invocation's start.
func TestTimeLimitSplit(t *testing.T) {
	f := &fakeRuns{t: t, store: openStore(t)}
	m := newRunner(shopFile("a"), f, idsync.Options{Kind: contract.KindRun, TimeLimit: time.Hour})
	m.Started = time.Now().Add(-10 * time.Minute)
	if _, err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := f.calls[0].o.TimeLimit; got > 50*time.Minute || got < 49*time.Minute {
		t.Errorf("a got --time-limit %s, want what is left of 1h after 10m", got)
	}
	f = &fakeRuns{t: t, store: openStore(t)}
	m = newRunner(shopFile("a"), f, idsync.Options{Kind: contract.KindRun, TimeLimit: time.Minute})
	m.Started = time.Now().Add(-2 * time.Minute)
	out, err := m.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(f.calls) != 0 || out.Resources[0].Status != StatusNotRun || !strings.Contains(out.Resources[0].Error, "--time-limit") {
		t.Errorf("a limit already spent ran %d times: %+v", len(f.calls), out.Resources)
	}
}

// A child whose parent did not complete is skipped; the job's exit code is
// the most severe of its resources'.
func TestParentFailedSkipsChild(t *testing.T) {
	f := &fakeRuns{t: t, store: openStore(t), script: map[string][]outcome{
		"p": {{fail: contract.Transient}}, "x": {{fail: contract.Permanent}}}}
	out := run(t, shopFile("p", "c<p", "x"), f, idsync.Options{})
	if got := statuses(out); !slices.Equal(got, []string{"p=failed", "c=skipped", "x=failed"}) {
		t.Errorf("results %v", got)
	}
	if out.Class != contract.Permanent || out.ExitCode != int(contract.Permanent) || out.Status != contract.RunFailed {
		t.Errorf("job exit %d %s, want 1 failed (1 is more severe than 3)", out.ExitCode, out.Status)
	}
	if c := out.Resources[1]; !strings.Contains(c.Error, "parent p did not complete (failed)") {
		t.Errorf("c's reason: %q", c.Error)
	}
	if !strings.Contains(out.Error, "p: ") || !strings.Contains(out.Error, "x: ") {
		t.Errorf("job error %q names neither failure", out.Error)
	}
	// A failed job closes its cycle: the next run continues the failed
	// runs, then runs the child.
	f.calls = nil
	run(t, shopFile("p", "c<p", "x"), f, idsync.Options{})
	if got, want := f.names(), []string{"p+", "x+", "c"}; !slices.Equal(got, want) {
		t.Errorf("next invocation runs %v, want %v", got, want)
	}
}

// resume continues the unfinished runs only; with none it is exit 5.
func TestResume(t *testing.T) {
	f := &fakeRuns{t: t, store: openStore(t)}
	jf := shopFile("a", "b")
	_, err := newRunner(jf, f, idsync.Options{Resume: true}).Run(context.Background())
	if contract.ClassOf(err) != contract.NothingToResume {
		t.Fatalf("resume with nothing unfinished: %v (exit %d), want exit 5", err, contract.ClassOf(err))
	}
	partialRun(t, f, "b")
	out := run(t, jf, f, idsync.Options{Resume: true})
	if got := f.names(); !slices.Equal(got, []string{"b+"}) {
		t.Errorf("resume runs %v", got)
	}
	if got := statuses(out); !slices.Equal(got, []string{"a=not_run", "b=completed"}) || out.Status != contract.RunPartial {
		t.Errorf("resume: %s %v", out.Status, got)
	}
}

// When every selected resource completed a run since the open cycle
// began, nothing runs, the job says up_to_date, and the cycle closes.
func TestUpToDate(t *testing.T) {
	f := &fakeRuns{t: t, store: openStore(t), script: map[string][]outcome{"b": {{pages: 3}}}}
	jf := shopFile("a", "b")
	run(t, jf, f, idsync.Options{MaxPages: 2}) // a completes, b partial: the cycle stays open
	run(t, jf, f, idsync.Options{}, "b")       // another selection finishes b
	f.calls = nil
	out := run(t, jf, f, idsync.Options{})
	if len(f.calls) != 0 {
		t.Errorf("ran %v", f.names())
	}
	if out.Status != StatusUpToDate || !slices.Equal(statuses(out), []string{"a=up_to_date", "b=up_to_date"}) {
		t.Errorf("result %s %v", out.Status, statuses(out))
	}
	run(t, jf, f, idsync.Options{})
	if got := f.names(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("after up_to_date the cycle closed, the next run syncs all: %v", got)
	}
}

// A selection narrower than the file keeps a cycle of its own.
func TestCycleName(t *testing.T) {
	f := &fakeRuns{t: t, store: openStore(t), script: map[string][]outcome{"b": {{pages: 2}}}}
	run(t, shopFile("a", "b", "c"), f, idsync.Options{MaxPages: 1}, "b", "c")
	for name, want := range map[string]bool{"shop|b,c": true, "shop": false} {
		if _, open, err := f.store.Cycle(context.Background(), name); err != nil || open != want {
			t.Errorf("cycle %q open %v (%v), want %v", name, open, err, want)
		}
	}
}

// Interrupted reports the results so far and the resource in progress
// with its committed pages.
func TestInterrupted(t *testing.T) {
	f := &fakeRuns{t: t, store: openStore(t), script: map[string][]outcome{"b": {{pages: 2, inserted: 4}}}}
	m := newRunner(shopFile("a", "b"), f, idsync.Options{})
	var got *JobResult
	f.during = func(resource string, page int) {
		if resource == "b" && page == 1 {
			got = m.Interrupted("stopped")
		}
	}
	if _, err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got == nil || got.Class != contract.Interrupted || got.Error != "stopped" || !slices.Equal(statuses(got), []string{"a=completed", "b=interrupted"}) {
		t.Fatalf("interrupted: %+v", got)
	}
	if b := got.Resources[1]; b.RunID == 0 || b.Pages != 1 || b.Inserted != 4 {
		t.Errorf("b in progress: %+v", b.Result)
	}
}

// A cancelled invocation runs no further resource and still reports
// every one: the state reads that decide how are not cancelled.
func TestCancelled(t *testing.T) {
	f := &fakeRuns{t: t, store: openStore(t)}
	ctx, cancel := context.WithCancel(context.Background())
	f.during = func(string, int) { cancel() }
	out, err := newRunner(shopFile("a", "b"), f, idsync.Options{Kind: contract.KindRun}).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.calls) != 1 || !slices.Equal(statuses(out), []string{"a=completed", "b=not_run"}) {
		t.Errorf("after a cancel: runs %v, results %v", f.names(), statuses(out))
	}
}

// A child that completed in the open cycle runs again when its parent
// wrote rows after the child's run began, even in another invocation (a
// --resource run of the parent): the state file says so, not memory.
func TestDirtyFromState(t *testing.T) {
	f := &fakeRuns{t: t, store: openStore(t), script: map[string][]outcome{"x": {{pages: 3}}}}
	jf := shopFile("p", "c<p", "x")
	run(t, jf, f, idsync.Options{MaxPages: 3}) // p and c complete, x stops partial: the cycle stays open
	f.script["p"] = []outcome{{pages: 1, inserted: 2}}
	run(t, jf, f, idsync.Options{}, "p") // p writes rows after c's run began
	f.calls = nil
	out := run(t, jf, f, idsync.Options{})
	if got, want := f.names(), []string{"x+", "c"}; !slices.Equal(got, want) {
		t.Errorf("runs %v, want %v (x continued, c again for p's new rows, p done in the cycle)", got, want)
	}
	if out.Status != contract.RunCompleted {
		t.Errorf("job %s %v", out.Status, statuses(out))
	}
	// A parent run that wrote nothing leaves the child alone.
	f.script["x"] = []outcome{{pages: 3}}
	run(t, jf, f, idsync.Options{MaxPages: 3}) // a new cycle: p and c complete, x stops partial
	f.script["p"] = []outcome{{pages: 1}}
	run(t, jf, f, idsync.Options{}, "p")
	f.calls = nil
	run(t, jf, f, idsync.Options{})
	if got, want := f.names(), []string{"x+"}; !slices.Equal(got, want) {
		t.Errorf("runs %v, want %v (the parent wrote nothing new)", got, want)
	}
}
