package checkpoint

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/idemsync/idemsync/contract"
)

// seenKeys reads runID's seen keys from s.
func seenKeys(t *testing.T, s *Store, runID int64) ([]string, bool) {
	t.Helper()
	var got []string
	complete, err := s.SeenKeys(context.Background(), runID, func(k string) error {
		got = append(got, k)
		return nil
	})
	if err != nil {
		t.Fatalf("SeenKeys: %v", err)
	}
	return got, complete
}

// A run's seen keys are those of every page committed to it, across the
// invocations it spans (the store closed, opened again, the run reopened);
// a page that failed to commit records none of its keys; a later run
// starts with none.
func TestSeenKeysSpanInvocationsOfOneRun(t *testing.T) {
	path := statePath(t)
	odd := "a\x00b" + string([]byte{0xff, 0}) // any byte may occur in a key
	s1 := openAt(t, path)
	id := startRun(t, s1, contract.RunInfo{Job: "orders", Checkpoint: "p1"})
	commit(t, s1, "orders", contract.PageCommit{RunID: id, Position: "p1", Next: "p2", Records: 2, Keys: []string{"int64:1\x00", odd}})
	if err := s1.FinishRun(context.Background(), id, contract.RunPartial, "", ""); err != nil {
		t.Fatal(err)
	}
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}

	s2 := openAt(t, path)
	if err := s2.Reopen(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	lost := &contract.PageCommit{RunID: id, Position: "p2", Next: "p3", Records: 1, Keys: []string{"lost"}}
	if err := s2.CommitPage(ctx, "orders", lost); err == nil {
		t.Fatal("CommitPage with a cancelled context succeeded")
	}
	commit(t, s2, "orders", contract.PageCommit{RunID: id, Position: "p2", Next: "p3", Records: 0, Keys: []string{}})
	commit(t, s2, "orders", contract.PageCommit{RunID: id, Position: "p3", Next: "", Records: 2, Keys: []string{"int64:3\x00", "int64:1\x00"}})

	got, complete := seenKeys(t, s2, id)
	want := []string{"int64:1\x00", odd, "int64:3\x00", "int64:1\x00"}
	if !reflect.DeepEqual(got, want) || !complete {
		t.Errorf("seen keys %q complete %v, want %q complete", got, complete, want)
	}
	if err := s2.FinishRun(context.Background(), id, contract.RunCompleted, "", ""); err != nil {
		t.Fatal(err)
	}
	next := startRun(t, s2, contract.RunInfo{Job: "orders", Checkpoint: "p1"})
	if got, complete := seenKeys(t, s2, next); len(got) != 0 || !complete {
		t.Errorf("a new run sees %q (complete %v), want none", got, complete)
	}
}

// A page committed without its keys makes the run's set incomplete, so
// that it cannot decide a deletion.
func TestSeenKeysIncompleteWithoutAPagesKeys(t *testing.T) {
	s := openTemp(t)
	id := startRun(t, s, contract.RunInfo{Job: "orders", Checkpoint: "p1"})
	commit(t, s, "orders", contract.PageCommit{RunID: id, Position: "p1", Next: "p2", Records: 1, Keys: []string{"k1"}})
	commit(t, s, "orders", contract.PageCommit{RunID: id, Position: "p2", Next: "", Records: 1})
	got, complete := seenKeys(t, s, id)
	if complete || !reflect.DeepEqual(got, []string{"k1"}) {
		t.Errorf("seen keys %q complete %v, want [k1] incomplete", got, complete)
	}
}

func TestSeenKeysCorruptAndCallbackError(t *testing.T) {
	s := openTemp(t)
	id := startRun(t, s, contract.RunInfo{Job: "orders", Checkpoint: "p1"})
	commit(t, s, "orders", contract.PageCommit{RunID: id, Position: "p1", Next: "p2", Records: 2, Keys: []string{"k1", "k2"}})
	stop := errors.New("stop")
	if _, err := s.SeenKeys(context.Background(), id, func(string) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("callback error: got %v, want it wrapped", err)
	}
	if _, err := s.db.Exec(`UPDATE pages SET keys = x'010a6b31' WHERE run_id = ?`, id); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SeenKeys(context.Background(), id, func(string) error { return nil }); err == nil {
		t.Error("a corrupt key list was read without error")
	}
	if _, err := s.db.Exec(`UPDATE pages SET keys = x'020401' WHERE run_id = ?`, id); err != nil { // 1 byte of a previous key that is not there
		t.Fatal(err)
	}
	if _, err := s.SeenKeys(context.Background(), id, func(string) error { return nil }); err == nil {
		t.Error("a corrupt compact key list was read without error")
	}
	if _, err := s.db.Exec(`UPDATE pages SET keys = x'03' WHERE run_id = ?`, id); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SeenKeys(context.Background(), id, func(string) error { return nil }); err == nil {
		t.Error("a key list of an unknown format was read without error")
	}
}
