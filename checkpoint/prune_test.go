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

// pruneCheckpointWAL moves the WAL into the file, so Size measures rows.
func pruneCheckpointWAL(t *testing.T, s *Store) {
	t.Helper()
	if _, err := s.db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
}
