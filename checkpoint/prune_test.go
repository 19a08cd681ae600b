package checkpoint

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
)

// pruneSimulate records runs of job every step for span (3 pages each,
// completed), as a cron job would, pruning after each run at keep when
// keep > 0. It returns the most runs and pages the job had at once.
func pruneSimulate(t *testing.T, s *Store, job string, span, step, keep time.Duration) (maxRuns, maxPages int64) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.db.Exec("PRAGMA synchronous = OFF"); err != nil { // speed only; the rows are the same
		t.Fatal(err)
	}
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return now }
	for end := now.Add(span); now.Before(end); now = now.Add(step) {
		id := startRun(t, s, contract.RunInfo{Job: job})
		for p := 1; p <= 3; p++ {
			pc := contract.PageCommit{RunID: id, Position: fmt.Sprintf("page:%d", p), Next: fmt.Sprintf("page:%d", p+1), Records: 100, Hash: fmt.Sprint(id, p)}
			if p == 3 {
				pc.FinishedAt = now.Add(time.Minute)
			}
			commit(t, s, job, pc)
		}
		if keep > 0 {
			if _, err := s.Prune(ctx, job, keep); err != nil {
				t.Fatal(err)
			}
		}
		var runs, pages int64
		if err := s.db.QueryRow(`SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM pages)`).Scan(&runs, &pages); err != nil {
			t.Fatal(err)
		}
		maxRuns, maxPages = max(maxRuns, runs), max(maxPages, pages)
	}
	return maxRuns, maxPages
}

// A year of runs every 6 hours with the default retention keeps about 30 days of
// runs and pages; without pruning everything stays. The sizes are logged.
func TestPruneKeepsStateBounded(t *testing.T) {
	const span, step = 365 * 24 * time.Hour, 6 * time.Hour
	pruned := openTemp(t)
	maxRuns, maxPages := pruneSimulate(t, pruned, "orders", span, step, DefaultRetention)
	window := int64(DefaultRetention / step)
	if maxRuns > window+2 || maxPages > 3*(window+2) {
		t.Errorf("with pruning: up to %d runs and %d pages at once, want at most %d and %d", maxRuns, maxPages, window+2, 3*(window+2))
	}
	if maxRuns < window {
		t.Errorf("only %d runs kept: pruned inside the retention window of %d runs", maxRuns, window)
	}
	pruneCheckpointWAL(t, pruned)
	t.Logf("a year of runs every 6h, retention %v: at most %d runs and %d page rows, state file %d KiB", DefaultRetention, maxRuns, maxPages, pruned.Size(context.Background())>>10)

	if testing.Short() {
		return
	}
	full := openTemp(t)
	allRuns, allPages := pruneSimulate(t, full, "orders", span, step, 0)
	pruneCheckpointWAL(t, full)
	before := full.Size(context.Background())
	st, err := full.Prune(context.Background(), "orders", DefaultRetention)
	if err != nil {
		t.Fatal(err)
	}
	if err := full.vacuum(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Logf("without pruning: %d runs and %d page rows, state file %d KiB; prune --keep 30d deleted %d runs and %d pages: %d KiB after VACUUM",
		allRuns, allPages, before>>10, st.Runs, st.Pages, full.Size(context.Background())>>10)
	if st.Kept > window+2 {
		t.Errorf("%d runs kept after prune, want at most %d", st.Kept, window+2)
	}
}

// Prune never deletes the latest run, the latest completed run, an
// unfinished run or its pages, or a run with dead letters.
func TestPruneKeepsWhatRunsNeed(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return now }
	page := func(id int64, p int, done bool, dead bool) {
		pc := contract.PageCommit{RunID: id, Position: fmt.Sprintf("page:%d", p), Next: fmt.Sprintf("page:%d", p+1), Hash: fmt.Sprint(id, p)}
		if done {
			pc.FinishedAt = now
		}
		if dead {
			pc.Dead = []contract.DeadLetter{{Index: 0, Reason: "bad", Raw: "{}"}}
		}
		commit(t, s, "orders", pc)
	}
	old := startRun(t, s, contract.RunInfo{Job: "orders"}) // completed, old: pruned
	page(old, 1, true, false)
	withDead := startRun(t, s, contract.RunInfo{Job: "orders"}) // completed with a dead letter: row kept
	page(withDead, 1, true, true)
	lastDone := startRun(t, s, contract.RunInfo{Job: "orders"}) // latest completed: kept
	page(lastDone, 1, true, false)
	unfinished := startRun(t, s, contract.RunInfo{Job: "orders"}) // partial: kept with its pages
	page(unfinished, 1, false, false)
	if err := s.FinishRun(ctx, unfinished, contract.RunPartial, "", ""); err != nil {
		t.Fatal(err)
	}
	now = now.Add(400 * 24 * time.Hour)
	st, err := s.Prune(ctx, "orders", DefaultRetention)
	if err != nil {
		t.Fatal(err)
	}
	if st.Runs != 1 || st.Pages != 2 || st.Kept != 3 {
		t.Errorf("prune: %+v, want 1 run and 2 pages deleted, 3 runs kept", st)
	}
	runs, _ := s.Runs(ctx, "orders", 0)
	if len(runs) != 3 || runs[0].ID != unfinished || runs[1].ID != lastDone || runs[2].ID != withDead {
		t.Errorf("runs kept: %+v", runs)
	}
	if ps, _ := s.Pages(ctx, unfinished); len(ps) != 1 {
		t.Errorf("unfinished run lost its pages: %+v", ps)
	}
	if u, err := s.Unfinished(ctx, "orders"); err != nil || u == nil || u.ID != unfinished {
		t.Errorf("unfinished run after prune: %+v %v", u, err)
	}
	if d, _ := s.DeadLetters(ctx, "orders", 0); len(d) != 1 {
		t.Errorf("dead letters after prune: %d", len(d))
	}
}

// pruneCheckpointWAL moves the WAL into the file, so Size measures rows.
func pruneCheckpointWAL(t *testing.T, s *Store) {
	t.Helper()
	if _, err := s.db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
}
