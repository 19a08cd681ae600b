package pgstate

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/postgres"
)

// With the state in the target's database, a page's rows and its
// checkpoint commit in one transaction: both or neither, and a holder
// whose lease another took over commits neither; PageCommitted reads a
// commit back (docs/guarantees.md, "One transaction per page").
func TestCommitPageInTargetTx(t *testing.T) {
	state := newSchema(t, url.Values{"lease": {"1s"}})
	if !SameDatabase(state, testURL(t)) || SameDatabase(state, "postgres://other-host/db") {
		t.Fatal("SameDatabase does not tell the test database's URLs apart")
	}
	ctx := context.Background()
	s := openTest(t, state)
	defer s.Close()
	sink, err := postgres.OpenTarget(ctx, contract.Conn{URL: testURL(t)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	tbl := &contract.Table{Schema: s.name, Name: "orders", Key: []string{"id"}, Create: true,
		Columns: []contract.Column{{Name: "id", Type: contract.TypeInteger}}}
	if err := sink.Prepare(ctx, tbl); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lock(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := s.Fencing("orders"); !ok {
		t.Fatal("Fencing: no token while the lease is held")
	}
	runID, err := s.StartRun(ctx, &contract.RunInfo{Job: "orders", Kind: contract.KindRun, StartedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	page := func(n int64, fail error) (*contract.PageCommit, error) {
		pc := &contract.PageCommit{RunID: runID, Position: "p" + string(rune('0'+n)), Next: "p" + string(rune('1'+n)), Records: 1, Hash: "h"}
		_, err := sink.UpsertIn(ctx, tbl, []contract.Row{{Values: []any{n}, Hash: "h"}}, func(ctx context.Context, tx contract.PageTx, c contract.Counts) error {
			pc.Inserted = c.Inserted
			if err := s.CommitPageIn(ctx, tx, "orders", pc); err != nil {
				return err
			}
			return fail
		})
		return pc, err
	}
	rows := func() int64 {
		var n int64
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM `+s.schema+`.orders`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	pc, err := page(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := s.PageCommitted(ctx, pc); !ok || err != nil {
		t.Errorf("PageCommitted after the commit: %v, %v", ok, err)
	}
	boom := errors.New("lost before the commit")
	pc2, err := page(2, boom)
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if ok, _ := s.PageCommitted(ctx, pc2); ok {
		t.Error("PageCommitted of a page rolled back")
	}
	if n, ps := rows(), pages(t, s, runID); n != 1 || ps != 1 {
		t.Errorf("after a rolled-back page: %d rows, %d pages; want 1 and 1", n, ps)
	}

	// Paused past its lease, taken over: its next page commits nothing.
	s.paused.Store(true)
	time.Sleep(1500 * time.Millisecond)
	other := openTest(t, state)
	defer other.Close()
	if _, err := other.Lock(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := page(3, nil); contract.ClassOf(err) != contract.Locked {
		t.Fatalf("a page after the takeover: %v, want the lease lost", err)
	}
	if n, ps := rows(), pages(t, s, runID); n != 1 || ps != 1 {
		t.Errorf("after the takeover: %d rows, %d pages; want 1 and 1", n, ps)
	}
}

func pages(t *testing.T, s *Store, runID int64) int {
	t.Helper()
	ps, err := s.Pages(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	return len(ps)
}
