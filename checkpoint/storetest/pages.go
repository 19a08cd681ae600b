package storetest

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
)

func pageCases() []testCase {
	return []testCase{
		{"commit page records everything", commitEverything},
		{"commit page keeps what it does not change", commitKeeps},
		{"last page completes the run", lastPage},
		{"refused commit changes nothing", refusedCommit},
		{"cancelled commit changes nothing", cancelledCommit},
		{"fault before commit changes nothing", faultBeforeCommit},
		{"committed state survives reopening", survivesReopen},
		{"dead letters", deadLetters},
		{"schema changes", schemaChanges},
		{"seen keys", seenKeys},
	}
}

// One page's commit moves the run's counters and checkpoint, the job's
// marks, columns, dead letters and metrics counters, and records the page
// with its keys.
func commitEverything(t *testing.T, e *env) {
	s := e.store(t)
	id := startRun(t, s, contract.RunInfo{Job: "orders", Checkpoint: "p1"})
	p := fullPage(id, "p1", "p2")
	p.Elapsed = 1500 * time.Millisecond
	p.Children = map[string]contract.ChildCounts{"order_lines": {Inserted: 5}, "order_tags": {Inserted: 1, Deleted: 2}}
	p.SchemaDiscards = contract.SchemaDiscards{NewFields: 1, Values: 2}
	commit(t, s, "orders", p)
	p2 := fullPage(id, "p2", "p3")
	p2.Children = map[string]contract.ChildCounts{"order_lines": {Inserted: 3, Deleted: 4}}
	p2.SchemaDiscards = contract.SchemaDiscards{NewFields: 4, Rows: 3}
	commit(t, s, "orders", p2)

	r := run(t, s, "orders", id)
	want := contract.RunInfo{ID: id, Number: 1, Job: "orders", Kind: contract.KindRun, Status: contract.RunRunning,
		Pages: 2, Records: 10, Inserted: 4, Updated: 2, Unchanged: 2, Skipped: 2, Deleted: 2,
		Checkpoint: "p3", Last: "p2", MaxMark: "m-p2", StartedAt: r.StartedAt, LiveBefore: r.LiveBefore,
		// Each child table's counts are the sums of the pages'.
		Children: map[string]contract.ChildCounts{"order_lines": {Inserted: 8, Deleted: 4}, "order_tags": {Inserted: 1, Deleted: 2}},
		// And what target.schema discarded, the sums of the pages'.
		SchemaDiscards: contract.SchemaDiscards{NewFields: 5, Values: 2, Rows: 3}}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("run after two pages:\n got %+v\nwant %+v", r, want)
	}
	js := jobState(t, s, "orders")
	if js.HWM != "hwm-p2" || js.Columns != `[{"name":"id-p2"}]` || js.DeadLetters != 2 {
		t.Errorf("job after two pages: HWM %q columns %q dead letters %d", js.HWM, js.Columns, js.DeadLetters)
	}
	ps := pages(t, s, id)
	if len(ps) != 2 {
		t.Fatalf("pages: %+v", ps)
	}
	for i, pos := range []string{"p1", "p2"} {
		got := ps[i]
		if got.RunID != id || got.Seq != int64(i+1) || got.Position != pos || got.Next != []string{"p2", "p3"}[i] ||
			got.Records != 5 || got.Hash != "h-"+pos || got.CommittedAt.IsZero() {
			t.Errorf("page %d: %+v", i+1, got)
		}
	}
	keys, complete := seen(t, s, id)
	if !complete || !reflect.DeepEqual(sorted(keys), []string{"k1-p1", "k1-p2", "k2-p1", "k2-p2"}) {
		t.Errorf("seen keys %v (complete %v)", keys, complete)
	}
	m, err := s.Metrics(context.Background(), "orders", "orders")
	if err != nil {
		t.Fatal(err)
	}
	if m.Pages != 2 || m.Inserted != 4 || m.Updated != 2 || m.Unchanged != 2 || m.Skipped != 2 || m.Deleted != 2 {
		t.Errorf("metrics counters after two pages: %+v", m)
	}
}

// Empty marks and columns keep the saved ones.
func commitKeeps(t *testing.T, e *env) {
	s := e.store(t)
	id := startRun(t, s, contract.RunInfo{Job: "orders", MaxMark: "m0"})
	commit(t, s, "orders", fullPage(id, "p1", "p2"))
	commit(t, s, "orders", contract.PageCommit{RunID: id, Position: "p2", Next: "p3"})
	js, r := jobState(t, s, "orders"), run(t, s, "orders", id)
	if js.HWM != "hwm-p1" || js.Columns != `[{"name":"id-p1"}]` || r.MaxMark != "m-p1" {
		t.Errorf("a page without marks or columns changed them: HWM %q columns %q max mark %q", js.HWM, js.Columns, r.MaxMark)
	}
	commit(t, s, "orders", contract.PageCommit{RunID: id, Position: "p3", Next: "p4", Columns: "[]"})
	if js := jobState(t, s, "orders"); js.Columns != "[]" {
		t.Errorf("columns set to none read back as %q", js.Columns)
	}
}

// A page with FinishedAt completes its run in the same transaction; a
// completed run takes no more pages.
func lastPage(t *testing.T, e *env) {
	s := e.store(t)
	id := startRun(t, s, contract.RunInfo{Job: "orders"})
	p := fullPage(id, "p1", "end")
	p.FinishedAt = t0
	commit(t, s, "orders", p)
	r := run(t, s, "orders", id)
	if r.Status != contract.RunCompleted || !r.FinishedAt.Equal(t0) || r.Checkpoint != "end" {
		t.Errorf("run after its last page: %+v", r)
	}
	if u, err := s.Unfinished(context.Background(), "orders"); err != nil || u != nil {
		t.Errorf("Unfinished = %+v, %v", u, err)
	}
	wantCode(t, "page of a completed run", s.CommitPage(context.Background(), "orders", &contract.PageCommit{RunID: id, Position: "end"}), contract.Permanent)
}

// A commit the store refuses (exit 1) leaves every part of the state as
// it was.
func refusedCommit(t *testing.T, e *env) {
	s := e.store(t)
	ctx := context.Background()
	id := startRun(t, s, contract.RunInfo{Job: "orders"})
	commit(t, s, "orders", fullPage(id, "p1", "p2"))
	done := startRun(t, s, contract.RunInfo{Job: "orders"})
	finish(t, s, done, contract.RunAbandoned, "")
	before := takeSnapshot(t, s, "orders")
	for _, tc := range []struct {
		what string
		job  string
		p    *contract.PageCommit
	}{
		{"no page", "orders", nil},
		{"unknown run", "orders", ptr(fullPage(done+100, "p2", "p3"))},
		{"run of another job", "other", ptr(fullPage(id, "p2", "p3"))},
		{"abandoned run", "orders", ptr(fullPage(done, "p2", "p3"))},
	} {
		wantCode(t, tc.what, s.CommitPage(ctx, tc.job, tc.p), contract.Permanent)
	}
	sameSnapshot(t, "refused commits", before, takeSnapshot(t, s, "orders"))
}

func ptr[T any](v T) *T { return &v }

// A commit whose context is cancelled fails with the context's error
// visible and records nothing.
func cancelledCommit(t *testing.T, e *env) {
	s := e.store(t)
	id := startRun(t, s, contract.RunInfo{Job: "orders"})
	commit(t, s, "orders", fullPage(id, "p1", "p2"))
	before := takeSnapshot(t, s, "orders")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := fullPage(id, "p2", "p3")
	if err := s.CommitPage(ctx, "orders", &p); !errors.Is(err, context.Canceled) {
		t.Errorf("CommitPage with a cancelled context: %v, want context.Canceled", err)
	}
	sameSnapshot(t, "a cancelled commit", before, takeSnapshot(t, s, "orders"))
}

// A fault between a page's writes and their commit (the process dying
// there, the context ending) leaves the checkpoint at the previous page
// with nothing of the page recorded: the page row, counters, marks,
// columns, keys, dead letters and metrics are one transaction.
func faultBeforeCommit(t *testing.T, e *env) {
	if e.h.BeforeCommit == nil {
		t.Skip("the harness injects no fault before a commit")
	}
	s := e.store(t)
	id := startRun(t, s, contract.RunInfo{Job: "orders"})
	commit(t, s, "orders", fullPage(id, "p1", "p2"))
	before := takeSnapshot(t, s, "orders")
	ctx, cancel := context.WithCancel(context.Background())
	e.h.BeforeCommit(s, cancel)
	p := fullPage(id, "p2", "p3")
	p.FinishedAt = t0
	if err := s.CommitPage(ctx, "orders", &p); err == nil {
		t.Fatal("CommitPage succeeded although its context ended before the commit")
	}
	sameSnapshot(t, "a commit that failed at its end", before, takeSnapshot(t, s, "orders"))
	// The same page commits once the fault is gone.
	commit(t, s, "orders", p)
	if r := run(t, s, "orders", id); r.Pages != 2 || r.Checkpoint != "p3" || r.Status != contract.RunCompleted {
		t.Errorf("run after the retried commit: %+v", r)
	}
}

// What was committed is there for the next process: close, reopen, read.
func survivesReopen(t *testing.T, e *env) {
	s, closeIt := e.closable(t)
	id := startRun(t, s, contract.RunInfo{Job: "orders"})
	commit(t, s, "orders", fullPage(id, "p1", "p2"))
	before := takeSnapshot(t, s, "orders")
	closeIt()
	s2 := e.store(t)
	sameSnapshot(t, "closing and reopening", before, takeSnapshot(t, s2, "orders"))
	// The run the closed store left running is unfinished for the next one.
	if u, err := s2.Unfinished(context.Background(), "orders"); err != nil || u == nil || u.ID != id {
		t.Errorf("Unfinished after reopening = %+v, %v", u, err)
	}
}

// Dead letters are stamped with job and run, listed newest first per job.
func deadLetters(t *testing.T, e *env) {
	s := e.store(t)
	ctx := context.Background()
	id := startRun(t, s, contract.RunInfo{Job: "orders"})
	commit(t, s, "orders", contract.PageCommit{RunID: id, Position: "p1", Next: "p2",
		Dead: []contract.DeadLetter{{Position: "p1", Index: 1, Reason: "r1", Raw: `{"a":1}`}, {Position: "p1", Index: 4, Reason: "r2", Raw: `{}`}}})
	commit(t, s, "orders", contract.PageCommit{RunID: id, Position: "p2", Next: "p3",
		Dead: []contract.DeadLetter{{Position: "p2", Index: 0, Reason: "r3", Raw: `[]`}}})
	other := startRun(t, s, contract.RunInfo{Job: "other"})
	commit(t, s, "other", contract.PageCommit{RunID: other, Position: "q", Next: "r", Dead: []contract.DeadLetter{{Reason: "elsewhere"}}})

	all, err := s.DeadLetters(ctx, "orders", 0)
	if err != nil || len(all) != 3 {
		t.Fatalf("DeadLetters = %+v, %v", all, err)
	}
	for i, want := range []string{"r3", "r2", "r1"} {
		d := all[i]
		if d.Reason != want || d.Job != "orders" || d.RunID != id || d.ID == 0 || d.At.IsZero() {
			t.Errorf("dead letter %d: %+v, want reason %s", i, d, want)
		}
	}
	if d := all[1]; d.Position != "p1" || d.Index != 4 || d.Raw != `{}` {
		t.Errorf("dead letter fields: %+v", d)
	}
	if two, err := s.DeadLetters(ctx, "orders", 2); err != nil || len(two) != 2 || two[0].Reason != "r3" {
		t.Errorf("DeadLetters(2) = %+v, %v", two, err)
	}
	if js := jobState(t, s, "orders"); js.DeadLetters != 3 {
		t.Errorf("JobState.DeadLetters = %d, want 3", js.DeadLetters)
	}
}

// Schema changes are recorded with their page, stamped with job, run and
// time, listed newest first per job, and go with the job when it is
// forgotten.
func schemaChanges(t *testing.T, e *env) {
	s := e.store(t)
	ctx := context.Background()
	id := startRun(t, s, contract.RunInfo{Job: "orders"})
	commit(t, s, "orders", contract.PageCommit{RunID: id, Position: "p1", Next: "p2", SchemaChanges: []contract.SchemaChange{
		{Table: "orders", Column: "price", To: "integer", Reason: "new field"}}})
	commit(t, s, "orders", contract.PageCommit{RunID: id, Position: "p2", Next: "p3", SchemaChanges: []contract.SchemaChange{
		{Table: "orders", Column: "price", From: "integer", To: "numeric", Reason: "record 2 holds 79.19"},
		{Table: "orders", Column: "tags", To: "json", Reason: "new field"}}})
	other := startRun(t, s, contract.RunInfo{Job: "other"})
	commit(t, s, "other", contract.PageCommit{RunID: other, Position: "q", Next: "r", SchemaChanges: []contract.SchemaChange{{Table: "t", Column: "c", To: "text", Reason: "elsewhere"}}})

	all, err := s.SchemaChanges(ctx, "orders", 0)
	if err != nil || len(all) != 3 {
		t.Fatalf("SchemaChanges = %+v, %v", all, err)
	}
	for i, want := range []string{"tags", "price", "price"} {
		c := all[i]
		if c.Column != want || c.Job != "orders" || c.RunID != id || c.ID == 0 || c.At.IsZero() || c.Table != "orders" {
			t.Errorf("schema change %d: %+v, want column %s", i, c, want)
		}
	}
	if c := all[1]; c.From != "integer" || c.To != "numeric" || c.Reason != "record 2 holds 79.19" {
		t.Errorf("schema change fields: %+v", c)
	}
	if one, err := s.SchemaChanges(ctx, "orders", 1); err != nil || len(one) != 1 || one[0].Column != "tags" {
		t.Errorf("SchemaChanges(1) = %+v, %v", one, err)
	}
	if _, err := s.Forget(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if left, err := s.SchemaChanges(ctx, "orders", 0); err != nil || len(left) != 0 {
		t.Errorf("after Forget: %+v, %v", left, err)
	}
	if kept, err := s.SchemaChanges(ctx, "other", 0); err != nil || len(kept) != 1 {
		t.Errorf("other job's after Forget: %+v, %v", kept, err)
	}
}

// SeenKeys returns the keys of every page of one run, any bytes in them;
// a page committed without keys makes the set incomplete; fn's error ends
// the walk and is returned.
func seenKeys(t *testing.T, e *env) {
	s := e.store(t)
	id := startRun(t, s, contract.RunInfo{Job: "orders"})
	odd := "a\x00b,\n\"é"
	commit(t, s, "orders", contract.PageCommit{RunID: id, Position: "p1", Next: "p2", Keys: []string{"1", odd, ""}})
	commit(t, s, "orders", contract.PageCommit{RunID: id, Position: "p2", Next: "p3", Keys: []string{}})
	other := startRun(t, s, contract.RunInfo{Job: "other"})
	commit(t, s, "other", contract.PageCommit{RunID: other, Position: "p1", Next: "p2", Keys: []string{"x"}})
	keys, complete := seen(t, s, id)
	if !complete || !reflect.DeepEqual(sorted(keys), sorted([]string{"1", odd, ""})) {
		t.Errorf("seen keys %q (complete %v)", keys, complete)
	}
	commit(t, s, "orders", contract.PageCommit{RunID: id, Position: "p3", Next: "p4"}) // no keys
	if _, complete := seen(t, s, id); complete {
		t.Error("a page committed without keys left the set complete")
	}
	stop := errors.New("stop")
	_, err := s.SeenKeys(context.Background(), id, func(string) error { return stop })
	if !errors.Is(err, stop) {
		t.Errorf("SeenKeys with a failing fn: %v, want its error", err)
	}
}
