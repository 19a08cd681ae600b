package checkpoint

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
	idsync "github.com/idemsync/idemsync/sync"
)

func TestCommitPageIsAtomic(t *testing.T) {
	// Every case starts from a run with one committed page and tries to
	// commit a second page that touches everything a page can touch.
	page := func(runID int64) *contract.PageCommit {
		return &contract.PageCommit{
			RunID: runID, Position: "p2", Next: "p3", Records: 5, Hash: "h",
			Inserted: 4, Skipped: 1, MaxMark: "7", HWM: "7",
			Columns:    idsync.EncodeColumns([]contract.Column{{Name: "id", Path: "id", Type: contract.TypeInteger}}),
			Dead:       []contract.DeadLetter{{Index: 0, Reason: "no key", Raw: `{"x":1}`}, {Index: 3, Reason: "bad", Raw: `{}`}},
			FinishedAt: time.Now(),
		}
	}
	for _, tc := range []struct {
		name     string
		job      string
		setup    func(t *testing.T, s *Store, runID int64) (context.Context, *contract.PageCommit)
		canceled bool // the error is the context's
	}{
		{name: "dead letter insert fails", setup: func(t *testing.T, s *Store, runID int64) (context.Context, *contract.PageCommit) {
			_, err := s.db.Exec(`CREATE TEMP TRIGGER fail_dead BEFORE INSERT ON main.dead_letters
				WHEN NEW.idx = 3 BEGIN SELECT RAISE(ABORT, 'injected failure'); END`)
			if err != nil {
				t.Fatal(err)
			}
			return context.Background(), page(runID)
		}},
		{name: "context cancelled before", canceled: true, setup: func(t *testing.T, s *Store, runID int64) (context.Context, *contract.PageCommit) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, page(runID)
		}},
		{name: "context cancelled before commit", canceled: true, setup: func(t *testing.T, s *Store, runID int64) (context.Context, *contract.PageCommit) {
			ctx, cancel := context.WithCancel(context.Background())
			s.beforeCommit = cancel
			t.Cleanup(func() { s.beforeCommit = nil })
			return ctx, page(runID)
		}},
		{name: "unknown run", setup: func(t *testing.T, s *Store, runID int64) (context.Context, *contract.PageCommit) {
			return context.Background(), page(runID + 100)
		}},
		{name: "run of another job", job: "other", setup: func(t *testing.T, s *Store, runID int64) (context.Context, *contract.PageCommit) {
			return context.Background(), page(runID)
		}},
		{name: "run not running", setup: func(t *testing.T, s *Store, runID int64) (context.Context, *contract.PageCommit) {
			if err := s.FinishRun(context.Background(), runID, contract.RunFailed, "x", ""); err != nil {
				t.Fatal(err)
			}
			return context.Background(), page(runID)
		}},
		{name: "no page", setup: func(t *testing.T, s *Store, runID int64) (context.Context, *contract.PageCommit) {
			return context.Background(), nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTemp(t)
			id := startRun(t, s, contract.RunInfo{Job: "orders", Checkpoint: "p1"})
			commit(t, s, "orders", contract.PageCommit{RunID: id, Position: "p1", Next: "p2", Records: 3,
				Inserted: 3, HWM: "5"})
			ctx, p := tc.setup(t, s, id)
			before := takeSnapshot(t, s, "orders", id)

			job := "orders"
			if tc.job != "" {
				job = tc.job
			}
			err := s.CommitPage(ctx, job, p)
			if err == nil {
				t.Fatal("CommitPage succeeded")
			}
			t.Logf("error: %v", err)
			if tc.canceled {
				if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), s.Path()) {
					t.Errorf("error %q: want context.Canceled naming the state file", err)
				}
			} else {
				wantPermanent(t, err, s.Path())
			}
			s.beforeCommit = nil
			sameSnapshot(t, before, takeSnapshot(t, s, "orders", id))
			if r := mustRun(t, s, "orders", id); r.Pages != 1 || r.Records != 3 || r.Checkpoint != "p2" {
				t.Errorf("run after failed commit: %+v", r)
			}
		})
	}
}

func TestCommitPageFinishesRun(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	id := startRun(t, s, contract.RunInfo{Job: "orders"})
	at := time.Date(2025, 5, 6, 7, 8, 9, 10, time.UTC)
	commit(t, s, "orders", contract.PageCommit{RunID: id, Position: "p1", Next: "", FinishedAt: at})
	r := mustRun(t, s, "orders", id)
	if r.Status != contract.RunCompleted || !r.FinishedAt.Equal(at) || r.Unfinished() {
		t.Errorf("run %+v", r)
	}
	if u, err := s.Unfinished(ctx, "orders"); err != nil || u != nil {
		t.Errorf("Unfinished = %+v, %v", u, err)
	}
	// A completed run takes no more pages.
	err := s.CommitPage(ctx, "orders", &contract.PageCommit{RunID: id, Position: "p2"})
	wantPermanent(t, err, s.Path())
}

func TestDeadLetters(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	s.now = fixedClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	id := startRun(t, s, contract.RunInfo{Job: "orders"})
	commit(t, s, "orders", contract.PageCommit{RunID: id, Position: "p1", Next: "p2", Skipped: 2,
		Dead: []contract.DeadLetter{
			{Index: 1, Reason: "missing key id", Raw: `{"name":"a"}`},
			{Index: 4, Reason: "total: not a number", Raw: `{"id":5,"total":"x"}`, Position: "p1#4"},
		}})
	commit(t, s, "orders", contract.PageCommit{RunID: id, Position: "p2", Next: "p3", Skipped: 1,
		Dead: []contract.DeadLetter{{Index: 0, Reason: "missing key id", Raw: `{}`}}})
	other := startRun(t, s, contract.RunInfo{Job: "other"})
	commit(t, s, "other", contract.PageCommit{RunID: other, Dead: []contract.DeadLetter{{Reason: "x", Raw: "{}"}}})

	all, err := s.DeadLetters(ctx, "orders", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 {
		t.Fatalf("%d dead letters, want 3: %+v", len(all), all)
	}
	want := []struct {
		pos    string
		idx    int
		reason string
		raw    string
	}{
		{"p2", 0, "missing key id", `{}`},
		{"p1#4", 4, "total: not a number", `{"id":5,"total":"x"}`},
		{"p1", 1, "missing key id", `{"name":"a"}`},
	}
	for i, d := range all {
		w := want[i]
		if d.Job != "orders" || d.RunID != id || d.Position != w.pos || d.Index != w.idx ||
			d.Reason != w.reason || d.Raw != w.raw || d.At.IsZero() || d.At.Location() != time.UTC {
			t.Errorf("dead letter %d: %+v, want %+v", i, d, w)
		}
		if i > 0 && d.ID >= all[i-1].ID {
			t.Errorf("not newest first: %d after %d", d.ID, all[i-1].ID)
		}
	}
	two, err := s.DeadLetters(ctx, "orders", 2)
	if err != nil || len(two) != 2 || two[0].ID != all[0].ID {
		t.Errorf("DeadLetters(2) = %+v, %v", two, err)
	}
	js, err := s.Job(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if js.DeadLetters != 3 {
		t.Errorf("job counts %d dead letters, want 3", js.DeadLetters)
	}
	if r := mustRun(t, s, "orders", id); r.Skipped != 3 {
		t.Errorf("run skipped %d, want 3", r.Skipped)
	}
}

func TestCommitPageNeverLogsRecords(t *testing.T) {
	var logs strings.Builder
	s := openTemp(t)
	s.log = slogTo(&logs)
	id := startRun(t, s, contract.RunInfo{Job: "orders"})
	commit(t, s, "orders", contract.PageCommit{RunID: id, Position: "p1",
		Dead: []contract.DeadLetter{{Reason: "bad", Raw: `{"card":"4111-SECRET"}`}}})
	if strings.Contains(logs.String(), "SECRET") {
		t.Errorf("a record reached the logs: %s", logs.String())
	}
	if !strings.Contains(logs.String(), "page checkpointed") {
		t.Errorf("expected a debug line, got %q", logs.String())
	}
}
