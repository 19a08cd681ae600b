package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/idemsync/idemsync/checkpoint/statedump"
	"github.com/idemsync/idemsync/contract"
)

func dumpCases() []testCase {
	return []testCase{
		{"export and import", exportImport},
	}
}

// Populate fills s with a row in every table a dump holds, and returns
// the runs it started.
func Populate(t *testing.T, s contract.Store) (runs []int64) {
	t.Helper()
	ctx := context.Background()
	a := startRun(t, s, contract.RunInfo{Job: "shop.orders", StartedAt: t0, Full: true, Identity: "walk-1"})
	commit(t, s, "shop.orders", fullPage(a, "p1", "p2"))
	p := fullPage(a, "p2", "p3")
	p.FinishedAt = t0.Add(time.Minute)
	p.Children = map[string]contract.ChildCounts{"order_lines": {Inserted: 4, Deleted: 1}}
	p.Marker = 7 // the target's progress marker moves with the state
	commit(t, s, "shop.orders", p)
	b := startRun(t, s, contract.RunInfo{Job: "shop.orders", StartedAt: t0.Add(time.Hour)})
	commit(t, s, "shop.orders", contract.PageCommit{RunID: b, Position: "q1", Next: "q2", Records: 1, Hash: "h",
		SchemaChanges:  []contract.SchemaChange{{Table: "orders", Column: "price", From: "integer", To: "numeric", Reason: "record 0 holds 1.5"}},
		SchemaDiscards: contract.SchemaDiscards{NewFields: 1, Values: 2, Rows: 3}})
	for _, err := range []error{
		s.OpenCycle(ctx, "shop", t0),
		s.SaveRefreshToken(ctx, "shop", "oauth", "seed", "refresh-secret", false),
		s.SaveRunKey(ctx, "shop", "2025-03-04T05:00:00Z", `{"run_id":1}`, t0),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.AddRunMetrics(ctx, "shop", "orders", contract.RunMetrics{At: t0, Duration: time.Second, Success: true}); err != nil {
		t.Fatal(err)
	}
	return []int64{a, b}
}

// A state exported and imported into an empty state exports the same;
// every table is in the dump, the refresh tokens only when asked; the
// imported state reads as the old one, its next run's id goes on after
// the imported ones, and a state holding a job refuses an import.
func exportImport(t *testing.T, e *env) {
	ctx := context.Background()
	s := e.store(t)
	from, ok := s.(statedump.Porter)
	if !ok {
		t.Skip("the store does not export")
	}
	runs := Populate(t, s)
	d, err := from.Export(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range statedump.Tables {
		if len(d.Tables[tb.Name]) == 0 {
			t.Errorf("the dump has no row of %s", tb.Name)
		}
	}
	noTokens, err := from.Export(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, has := noTokens.Tables["auth_credentials"]; has || noTokens.Tokens {
		t.Error("an export without tokens holds the refresh tokens")
	}
	// Through JSON, as state export | state import.
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(d); err != nil {
		t.Fatal(err)
	}
	read, err := statedump.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	other := (&env{h: e.h, open: e.h.New(t)}).store(t)
	to := other.(statedump.Porter)
	if err := to.Import(ctx, read); err != nil {
		t.Fatal(err)
	}
	back, err := to.Export(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if same, which := statedump.Equal(d, back); !same {
		t.Errorf("the imported state exports differently: %s", which)
	}
	sameSnapshot(t, "export and import", toMicros(takeSnapshot(t, s, "shop.orders")), takeSnapshot(t, other, "shop.orders"))
	if tok, _, err := other.LoadRefreshToken(ctx, "shop", "oauth", "seed"); err != nil || tok != "refresh-secret" {
		t.Errorf("imported refresh token = %q, %v", tok, err)
	}
	next := startRun(t, other, contract.RunInfo{Job: "shop.orders"})
	if next <= runs[1] {
		t.Errorf("the first run after the import has id %d, not after the imported %d", next, runs[1])
	}
	if err := to.Import(ctx, read); err == nil {
		t.Error("an import into a state holding jobs succeeded")
	}
}

// toMicros is sn with its page and dead letter times to the microsecond,
// as a dump keeps them.
func toMicros(sn snapshot) snapshot {
	for _, ps := range sn.Pages {
		for i := range ps {
			ps[i].CommittedAt = ps[i].CommittedAt.Truncate(time.Microsecond)
		}
	}
	for i := range sn.Dead {
		sn.Dead[i].At = sn.Dead[i].At.Truncate(time.Microsecond)
	}
	for i := range sn.Schema {
		sn.Schema[i].At = sn.Schema[i].At.Truncate(time.Microsecond)
	}
	return sn
}
