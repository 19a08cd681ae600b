package checkpoint

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
	idsync "github.com/idemsync/idemsync/sync"
)

func TestRunLifecycle(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.FixedZone("CET", 3600))
	s.now = fixedClock(start)

	id := startRun(t, s, contract.RunInfo{Job: "orders", Kind: contract.KindReplay,
		Checkpoint: "page:1", Window: "2025-01-01T00:00:00Z", From: "1", To: "9"})
	pages := []contract.PageCommit{
		{Position: "page:1", Next: "page:2", Records: 10, Hash: "h1",
			Inserted: 10, MaxMark: "2025-02-01T00:00:00Z", Elapsed: 1500 * time.Millisecond},
		{Position: "page:2", Next: "page:3", Records: 7, Hash: "h2",
			Inserted: 2, Updated: 3, Unchanged: 1, Skipped: 1},
		{Position: "page:3", Next: "page:4", Records: 0, Hash: "h3", FinishedAt: start.Add(time.Hour)},
	}
	for i, p := range pages {
		p.RunID = id
		commit(t, s, "orders", p)
		r := mustRun(t, s, "orders", id)
		if r.Pages != int64(i+1) || r.Checkpoint != p.Next || r.Last != p.Position {
			t.Errorf("after page %d: pages %d checkpoint %q last %q", i+1, r.Pages, r.Checkpoint, r.Last)
		}
	}

	got := mustRun(t, s, "orders", id)
	want := contract.RunInfo{
		ID: id, Number: 1, Job: "orders", Kind: contract.KindReplay, Status: contract.RunCompleted,
		StartedAt: start.Add(1500 * time.Millisecond).UTC(), FinishedAt: start.Add(time.Hour).UTC(),
		Pages: 3, Records: 17, Inserted: 12, Updated: 3, Unchanged: 1, Skipped: 1,
		Checkpoint: "page:4", Last: "page:3", Window: "2025-01-01T00:00:00Z",
		MaxMark: "2025-02-01T00:00:00Z", From: "1", To: "9",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("run:\n got %+v\nwant %+v", got, want)
	}
	if got.StartedAt.Location() != time.UTC {
		t.Errorf("StartedAt not in UTC: %v", got.StartedAt)
	}

	ps, err := s.Pages(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 3 {
		t.Fatalf("%d pages, want 3", len(ps))
	}
	for i, p := range ps {
		if p.Seq != int64(i+1) || p.RunID != id || p.Position != pages[i].Position ||
			p.Next != pages[i].Next || p.Records != pages[i].Records || p.Hash != pages[i].Hash {
			t.Errorf("page %d: %+v", i+1, p)
		}
		if i > 0 && !p.CommittedAt.After(ps[i-1].CommittedAt) {
			t.Errorf("page %d committed at %v, not after %v", i+1, p.CommittedAt, ps[i-1].CommittedAt)
		}
	}

	// FinishRun may confirm the completion the last page recorded.
	if err := s.FinishRun(ctx, id, contract.RunCompleted, "", "2025-02-01T00:00:00Z"); err != nil {
		t.Fatal(err)
	}
	js, err := s.Job(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if js.HWM != "2025-02-01T00:00:00Z" || js.LastRun == nil || js.LastRun.ID != id || js.Holder != "" {
		t.Errorf("job state %+v", js)
	}
}

func TestTimestampsKeepNanoseconds(t *testing.T) {
	s := openTemp(t)
	at := time.Date(2025, 1, 2, 3, 4, 5, 123456789, time.FixedZone("X", -7*3600))
	id := startRun(t, s, contract.RunInfo{Job: "orders", StartedAt: at})
	r := mustRun(t, s, "orders", id)
	if !r.StartedAt.Equal(at) || r.StartedAt.Location() != time.UTC {
		t.Errorf("StartedAt %v, want %v in UTC", r.StartedAt, at)
	}
	var text string
	if err := s.db.QueryRow("SELECT started_at FROM runs WHERE id = ?", id).Scan(&text); err != nil {
		t.Fatal(err)
	}
	if text != "2025-01-02T10:04:05.123456789Z" {
		t.Errorf("stored %q", text)
	}
}

func TestUnfinished(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		status     string // "" = leave running
		unfinished bool
	}{
		{"", true},
		{contract.RunInterrupted, true},
		{contract.RunFailed, true},
		{contract.RunPartial, true},
		{contract.RunCompleted, false},
		{contract.RunAbandoned, false},
	} {
		t.Run("status "+tc.status, func(t *testing.T) {
			s := openTemp(t)
			if r, err := s.Unfinished(ctx, "orders"); err != nil || r != nil {
				t.Fatalf("never run: %+v, %v", r, err)
			}
			id := startRun(t, s, contract.RunInfo{Job: "orders", Checkpoint: "c"})
			if tc.status != "" {
				if err := s.FinishRun(ctx, id, tc.status, "boom", ""); err != nil {
					t.Fatal(err)
				}
			}
			r, err := s.Unfinished(ctx, "orders")
			if err != nil {
				t.Fatal(err)
			}
			if (r != nil) != tc.unfinished {
				t.Fatalf("Unfinished = %+v, want unfinished %v", r, tc.unfinished)
			}
			if r != nil && (r.ID != id || r.Checkpoint != "c") {
				t.Errorf("Unfinished = %+v", r)
			}
			if r, _ := s.Unfinished(ctx, "other"); r != nil {
				t.Errorf("another job sees run %+v", r)
			}
		})
	}
}

func TestUnfinishedLooksAtLatestRunOnly(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	old := startRun(t, s, contract.RunInfo{Job: "orders"})
	if err := s.FinishRun(ctx, old, contract.RunFailed, "x", ""); err != nil {
		t.Fatal(err)
	}
	latest := startRun(t, s, contract.RunInfo{Job: "orders"})
	if err := s.FinishRun(ctx, latest, contract.RunCompleted, "", ""); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Unfinished(ctx, "orders"); err != nil || r != nil {
		t.Errorf("Unfinished = %+v, %v; want nil", r, err)
	}
}

func TestReopen(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	id := startRun(t, s, contract.RunInfo{Job: "orders"})
	if err := s.FinishRun(ctx, id, contract.RunFailed, "HTTP 500", ""); err != nil {
		t.Fatal(err)
	}
	if r := mustRun(t, s, "orders", id); r.Error != "HTTP 500" || r.FinishedAt.IsZero() {
		t.Errorf("failed run %+v", r)
	}
	if err := s.Reopen(ctx, id); err != nil {
		t.Fatal(err)
	}
	r := mustRun(t, s, "orders", id)
	if r.Status != contract.RunRunning || r.Error != "" || !r.FinishedAt.IsZero() {
		t.Errorf("reopened run %+v", r)
	}

	if err := s.FinishRun(ctx, id, contract.RunCompleted, "", ""); err != nil {
		t.Fatal(err)
	}
	err := s.Reopen(ctx, id)
	wantPermanent(t, err, s.Path())
	if !strings.Contains(err.Error(), "completed") {
		t.Errorf("error %q does not say why", err)
	}
	wantPermanent(t, s.Reopen(ctx, 999), s.Path())
}

func TestFinishRunRejects(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	id := startRun(t, s, contract.RunInfo{Job: "orders"})
	for _, tc := range []struct {
		name   string
		id     int64
		status string
	}{
		{"unknown run", 999, contract.RunCompleted},
		{"running is not final", id, contract.RunRunning},
		{"unknown status", id, "done"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantPermanent(t, s.FinishRun(ctx, tc.id, tc.status, "", "5"), s.Path())
		})
	}
	if js, _ := s.Job(ctx, "orders"); js.HWM != "" {
		t.Errorf("hwm %q after rejected calls", js.HWM)
	}
}

func TestStartRunRejects(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	for _, r := range []*contract.RunInfo{
		nil,
		{Job: ""},
		{Job: "../evil"},
		{Job: "orders", Kind: "backfill"},
	} {
		_, err := s.StartRun(ctx, r)
		wantPermanent(t, err, s.Path())
	}
	id := startRun(t, s, contract.RunInfo{Job: "orders"})
	if r := mustRun(t, s, "orders", id); r.Kind != contract.KindRun || r.Status != contract.RunRunning {
		t.Errorf("defaults: %+v", r)
	}
}

func TestHighWaterMarkOnlyWhenAsked(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	hwm := func() string {
		t.Helper()
		js, err := s.Job(ctx, "orders")
		if err != nil {
			t.Fatal(err)
		}
		return js.HWM
	}
	id := startRun(t, s, contract.RunInfo{Job: "orders"})
	steps := []struct {
		name string
		do   func() error
		want string
	}{
		{"page without hwm", func() error {
			return s.CommitPage(ctx, "orders", &contract.PageCommit{RunID: id, Next: "1", MaxMark: "10"})
		}, ""},
		{"page with hwm", func() error {
			return s.CommitPage(ctx, "orders", &contract.PageCommit{RunID: id, Next: "2", HWM: "20"})
		}, "20"},
		{"page without hwm keeps it", func() error {
			return s.CommitPage(ctx, "orders", &contract.PageCommit{RunID: id, Next: "3"})
		}, "20"},
		{"failed run ignores hwm", func() error { return s.FinishRun(ctx, id, contract.RunFailed, "x", "99") }, "20"},
		{"partial run ignores hwm", func() error { return s.FinishRun(ctx, id, contract.RunPartial, "", "98") }, "20"},
		{"completed without hwm keeps it", func() error { return s.FinishRun(ctx, id, contract.RunCompleted, "", "") }, "20"},
		{"completed with hwm sets it", func() error { return s.FinishRun(ctx, id, contract.RunCompleted, "", "30") }, "30"},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got := hwm(); got != st.want {
			t.Errorf("%s: hwm %q, want %q", st.name, got, st.want)
		}
		if st.name == "page without hwm keeps it" {
			if r := mustRun(t, s, "orders", id); r.MaxMark != "10" {
				t.Errorf("max mark %q, want 10 (unchanged when not given)", r.MaxMark)
			}
		}
	}
}

func TestColumnsSavedWhenGiven(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	id := startRun(t, s, contract.RunInfo{Job: "orders"})
	cols := []contract.Column{
		{Name: "id", Path: "id", Type: contract.TypeInteger},
		{Name: "email", Path: "customer.email", Type: contract.TypeText},
		{Name: "qty", Path: "qty", Type: contract.TypeNumeric, Was: contract.TypeInteger}, // widened
	}
	for _, step := range []struct {
		cols []contract.Column
		want []contract.Column
	}{
		{nil, nil},
		{cols, cols},
		{nil, cols},
		{cols[:1], cols[:1]},
		{[]contract.Column{}, []contract.Column{}},
	} {
		commit(t, s, "orders", contract.PageCommit{RunID: id, Columns: idsync.EncodeColumns(step.cols)})
		js, err := s.Job(ctx, "orders")
		if err != nil {
			t.Fatal(err)
		}
		got, err := idsync.DecodeColumns(js.Columns)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, step.want) {
			t.Errorf("columns %#v, want %#v", got, step.want)
		}
	}
}

func TestRunsNewestFirst(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	var ids []int64
	for range 4 {
		id := startRun(t, s, contract.RunInfo{Job: "orders"})
		if err := s.FinishRun(ctx, id, contract.RunCompleted, "", ""); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	startRun(t, s, contract.RunInfo{Job: "other"})
	for _, tc := range []struct {
		n    int
		want []int64
	}{
		{2, []int64{ids[3], ids[2]}},
		{0, []int64{ids[3], ids[2], ids[1], ids[0]}},
		{10, []int64{ids[3], ids[2], ids[1], ids[0]}},
	} {
		runs, err := s.Runs(ctx, "orders", tc.n)
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, r := range runs {
			got = append(got, r.ID)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Runs(%d) = %v, want %v", tc.n, got, tc.want)
		}
	}
	if runs, err := s.Runs(ctx, "never", 5); err != nil || len(runs) != 0 {
		t.Errorf("Runs of a job never run: %v, %v", runs, err)
	}
}

func TestJobs(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	if jobs, err := s.Jobs(ctx); err != nil || len(jobs) != 0 {
		t.Fatalf("new file: %v, %v", jobs, err)
	}
	for _, name := range []string{"zeta", "Alpha", "orders", "a-b_c"} {
		startRun(t, s, contract.RunInfo{Job: name})
	}
	jobs, err := s.Jobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, j := range jobs {
		names = append(names, j.Name)
		if j.LastRun == nil || j.LastRun.Job != j.Name {
			t.Errorf("job %s: last run %+v", j.Name, j.LastRun)
		}
	}
	if want := []string{"Alpha", "a-b_c", "orders", "zeta"}; !reflect.DeepEqual(names, want) {
		t.Errorf("Jobs = %v, want %v", names, want)
	}

	js, err := s.Job(ctx, "never")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(js, &contract.JobState{Name: "never"}) {
		t.Errorf("job never run: %+v", js)
	}
}
