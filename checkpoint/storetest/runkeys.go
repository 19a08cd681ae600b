package storetest

import (
	"context"
	"testing"
	"time"
)

func runKeyCases() []testCase {
	return []testCase{
		{"run keys", runKeys},
	}
}

// A run key's first result stays, per job; prune drops the keys older than
// it keeps and forget every key of the job (docs/operations.md, "Run keys").
func runKeys(t *testing.T, e *env) {
	s := e.store(t)
	ctx := context.Background()
	check := func(job, key, want string, wantFound bool) {
		t.Helper()
		got, found, err := s.RunKey(ctx, job, key)
		if err != nil || found != wantFound || got != want {
			t.Errorf("RunKey(%s, %s) = %q, %v, %v; want %q, %v", job, key, got, found, err, want, wantFound)
		}
	}
	check("orders", "2025-03-04T05:00:00Z", "", false)
	now := time.Now().UTC().Truncate(time.Second)
	if err := s.SaveRunKey(ctx, "orders", "k1", `{"run_id":1}`, now); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveRunKey(ctx, "orders", "k1", `{"run_id":2}`, now); err != nil {
		t.Fatal(err)
	}
	check("orders", "k1", `{"run_id":1}`, true)
	check("customers", "k1", "", false)
	if err := s.SaveRunKey(ctx, "orders", "old", `{"run_id":0}`, now.Add(-48*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveRunKey(ctx, "customers", "k1", `{"run_id":3}`, now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prune(ctx, "orders", 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	check("orders", "old", "", false)
	check("orders", "k1", `{"run_id":1}`, true)
	if _, err := s.Forget(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	check("orders", "k1", "", false)
	check("customers", "k1", `{"run_id":3}`, true)
}
