package checkpoint

import (
	"context"
	"testing"

	"github.com/idemsync/idemsync/contract"
)

// A run of kind run stores its walk for itself and the job; a replay only
// for itself; AdoptIdentity fills only what is missing; ClearMark forgets
// the saved mark.
func TestIdentityStored(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	id1 := startRun(t, s, contract.RunInfo{Job: "j", Kind: contract.KindRun, Identity: `{"pagination.size":"50"}`})
	st, err := s.Job(ctx, "j")
	if err != nil || st.Identity != `{"pagination.size":"50"}` || st.LastRun.Identity != st.Identity {
		t.Fatalf("after a run: job identity %q, run identity %q, %v", st.Identity, st.LastRun.Identity, err)
	}
	if err := s.FinishRun(ctx, id1, contract.RunCompleted, "", "2024-01-01T00:00:00.000Z"); err != nil {
		t.Fatal(err)
	}
	id2 := startRun(t, s, contract.RunInfo{Job: "j", Kind: contract.KindReplay, Identity: `{"pagination.size":"100"}`})
	if st, _ = s.Job(ctx, "j"); st.Identity != `{"pagination.size":"50"}` || st.LastRun.Identity != `{"pagination.size":"100"}` {
		t.Fatalf("a replay changed the job's identity: job %q, replay %q", st.Identity, st.LastRun.Identity)
	}
	if err := s.AdoptIdentity(ctx, "j", id2, `{"other":"x"}`); err != nil {
		t.Fatal(err)
	}
	if st, _ = s.Job(ctx, "j"); st.Identity != `{"pagination.size":"50"}` || st.LastRun.Identity != `{"pagination.size":"100"}` {
		t.Fatalf("AdoptIdentity overwrote a stored identity: job %q, run %q", st.Identity, st.LastRun.Identity)
	}
	if _, err := s.db.ExecContext(ctx, `UPDATE jobs SET identity = NULL; UPDATE runs SET identity = NULL`); err != nil {
		t.Fatal(err)
	}
	if err := s.AdoptIdentity(ctx, "j", id2, `{"other":"x"}`); err != nil {
		t.Fatal(err)
	}
	if st, _ = s.Job(ctx, "j"); st.Identity != `{"other":"x"}` || st.LastRun.Identity != `{"other":"x"}` {
		t.Fatalf("AdoptIdentity on an older file: job %q, run %q", st.Identity, st.LastRun.Identity)
	}
	if st.HWM != "2024-01-01T00:00:00.000Z" {
		t.Fatalf("saved mark %q", st.HWM)
	}
	if err := s.ClearMark(ctx, "j"); err != nil {
		t.Fatal(err)
	}
	if st, _ = s.Job(ctx, "j"); st.HWM != "" {
		t.Fatalf("ClearMark left %q", st.HWM)
	}
}
