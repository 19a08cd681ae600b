package pgstate

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

// The database decides, not the holder's clock: a holder that still
// trusts its lease (it was stopped right after checking it, or its clock
// is wrong) and whose token another Store superseded commits nothing, and
// learns that its lease is lost.
func TestFenceByToken(t *testing.T) {
	state := newSchema(t, url.Values{"lease": {"1s"}})
	ctx := context.Background()
	a, b := openTest(t, state), openTest(t, state)
	defer a.Close()
	defer b.Close()
	unlockA, err := a.Lock(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	defer unlockA()
	id, err := a.StartRun(ctx, &contract.RunInfo{Job: "orders"})
	if err != nil {
		t.Fatal(err)
	}
	a.paused.Store(true)
	// The lease expires in the database; a's own view says it runs on.
	if _, err := a.pool.Exec(ctx, a.q(`UPDATE {S}.leases SET expires_at = clock_timestamp() - interval '1 second' WHERE job = 'orders'`)); err != nil {
		t.Fatal(err)
	}
	l := a.leases["orders"]
	l.mu.Lock()
	l.trusted = time.Now().Add(time.Hour)
	l.mu.Unlock()
	unlockB, err := b.Lock(ctx, "orders")
	if err != nil {
		t.Fatalf("takeover: %v", err)
	}
	defer unlockB()
	err = a.CommitPage(ctx, "orders", &contract.PageCommit{RunID: id, Position: "p1", Next: "p2", Records: 1})
	if code := contract.ClassOf(err); code != contract.Locked {
		t.Fatalf("commit with a superseded token: exit %d (%v), want 4", code, err)
	}
	if r, _ := b.Unfinished(ctx, "orders"); r == nil || r.Pages != 0 {
		t.Errorf("run after the refused commit: %+v", r)
	}
	l.mu.Lock()
	lost := l.lost
	l.mu.Unlock()
	if !lost {
		t.Error("the refused commit did not mark the lease lost")
	}
	// Once lost, nothing is written for the job, even an identity.
	if err := a.AdoptIdentity(ctx, "orders", id, "x"); contract.ClassOf(err) != contract.Locked {
		t.Errorf("write after the lease was lost: %v, want exit 4", err)
	}
}

// A resource's writes ("shop.orders") are fenced by the lease of its job
// file ("shop") too: the runner locks the file, the engine the resource.
func TestFenceByFileLease(t *testing.T) {
	state := newSchema(t, url.Values{"lease": {"1s"}})
	ctx := context.Background()
	a := openTest(t, state)
	defer a.Close()
	unlock, err := a.Lock(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if _, err := a.StartRun(ctx, &contract.RunInfo{Job: "shop.orders"}); err != nil {
		t.Fatal(err)
	}
	a.paused.Store(true)
	time.Sleep(1500 * time.Millisecond)
	_, err = a.StartRun(ctx, &contract.RunInfo{Job: "shop.orders"})
	if contract.ClassOf(err) != contract.Locked {
		t.Errorf("write under the expired lease of the job file: %v, want exit 4", err)
	}
}

// A schema written by a newer idemsync is refused, naming the versions;
// a schema holding another application's tables is refused and left as
// it was.
func TestOpenRefuses(t *testing.T) {
	ctx := context.Background()
	state := newSchema(t, nil)
	s := openTest(t, state)
	if _, err := s.pool.Exec(ctx, s.q(`INSERT INTO {S}.idemsync_schema (version, name) VALUES (9999, '9999_future.sql')`)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err := Open(ctx, state, testLogger(t))
	if contract.ClassOf(err) != contract.Permanent || err == nil || !strings.Contains(err.Error(), "newer idemsync") {
		t.Errorf("Open of a newer schema: %v", err)
	}

	other := newSchema(t, nil)
	u, _ := url.Parse(other)
	schema := u.Query().Get("schema")
	s2 := openTest(t, newSchema(t, nil)) // a connection to create the foreign table with
	defer s2.Close()
	if _, err := s2.pool.Exec(ctx, "CREATE SCHEMA "+schema+"; CREATE TABLE "+schema+".customers (id int)"); err != nil {
		t.Fatal(err)
	}
	_, err = Open(ctx, other, testLogger(t))
	if contract.ClassOf(err) != contract.Permanent || err == nil || !strings.Contains(err.Error(), "not an idemsync state") {
		t.Errorf("Open of another application's schema: %v", err)
	}
	var n int
	if err := s2.pool.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = $1`, schema).Scan(&n); err != nil || n != 1 {
		t.Errorf("foreign schema has %d tables after the refused Open (%v), want 1", n, err)
	}
}

// A bad schema or lease in the URL is invalid usage (exit 2), and no
// message shows the password.
func TestOpenBadURL(t *testing.T) {
	for _, state := range []string{
		"postgres://u:s3cret@127.0.0.1:1/db?schema=a-b",
		"postgres://u:s3cret@127.0.0.1:1/db?lease=soon",
		"postgres://u:s3cret@127.0.0.1:1/db?lease=1ms",
	} {
		_, err := Open(context.Background(), state, nil)
		if contract.ClassOf(err) != contract.Invalid || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Open(%s) = %v, want exit 2 without the password", sqlkit.RedactURL(state), err)
		}
	}
}

// A lease taken after waiting for the previous holder's page transaction
// (its fence renewal locks the lease's row until the commit) is stamped
// with the moment it was taken, not the moment the taker asked: its
// acquired_at is never before the previous lease's end, and it runs a
// whole lease from then (seen by e2e's TestMultiHostModel history check).
func TestLockAfterWaitStampsTakeover(t *testing.T) {
	state := newSchema(t, url.Values{"lease": {"1s"}})
	ctx := context.Background()
	a, b := openTest(t, state), openTest(t, state)
	defer a.Close()
	defer b.Close()
	unlockA, err := a.Lock(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	defer unlockA()
	a.paused.Store(true)
	// a's page transaction renews the lease for 300 ms and holds the row.
	tx, err := a.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var ends time.Time
	if err := tx.QueryRow(ctx, a.q(`UPDATE {S}.leases SET expires_at = clock_timestamp() + interval '300 milliseconds'
		WHERE job = 'orders' RETURNING expires_at`)).Scan(&ends); err != nil {
		t.Fatal(err)
	}
	taken := make(chan error, 1)
	go func() { _, err := b.Lock(ctx, "orders"); taken <- err }()
	time.Sleep(600 * time.Millisecond) // b waits on the row; a's lease runs out
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-taken; err != nil {
		t.Fatalf("takeover after the lease ended: %v", err)
	}
	var acquired, expires time.Time
	if err := b.pool.QueryRow(ctx, b.q(`SELECT acquired_at, expires_at FROM {S}.leases WHERE job = 'orders'`)).Scan(&acquired, &expires); err != nil {
		t.Fatal(err)
	}
	if acquired.Before(ends) {
		t.Errorf("lease stamped acquired at %s, before the previous one ended at %s", acquired.Format(time.RFC3339Nano), ends.Format(time.RFC3339Nano))
	}
	if d := expires.Sub(acquired); d < time.Second || d > time.Second+100*time.Millisecond {
		t.Errorf("lease runs %s from its stamp, want 1s", d)
	}
}

// A holder whose lease ran out does not know that another process holds
// the job (it may only have been paused): its error says the lease was
// lost, exit 4, and claims no other run (docs/fault-tolerance.md).
func TestLeaseLostClaimsNoOtherRun(t *testing.T) {
	err := leaseLost(&lease{job: "shop.orders", token: 2})
	if c := contract.ClassOf(err); c != contract.Locked {
		t.Errorf("class %v, want Locked (exit 4)", c)
	}
	msg := err.Error()
	if !strings.Contains(msg, "the lease on job shop.orders (token 2) was lost; this process stops without writing") {
		t.Errorf("message %q does not say the lease was lost", msg)
	}
	if strings.Contains(msg, contract.ErrLocked.Error()) {
		t.Errorf("message %q says another run is in progress, which a holder whose lease ran out does not know", msg)
	}
}

// A host that opened the state and then waited for a job's lease
// (--if-running wait) takes it after other hosts ran: one running a newer
// idemsync may have migrated the schema and written the job's state in a
// form this build would misread. Lock reads the schema's version again
// once it holds the lease and refuses the state as newer, the lease given
// back (docs/operations.md, "State in PostgreSQL").
func TestLockRefusesASchemaMigratedWhileWaiting(t *testing.T) {
	ctx := context.Background()
	state := newSchema(t, nil)
	waiting := openTest(t, state)
	defer waiting.Close()
	if _, err := waiting.pool.Exec(ctx, waiting.q(`INSERT INTO {S}.idemsync_schema (version, name) VALUES (9999, '9999_future.sql')`)); err != nil {
		t.Fatal(err)
	}
	unlock, err := waiting.Lock(ctx, "orders")
	if err == nil {
		unlock()
		t.Fatal("Lock took the lease of a state a newer idemsync migrated after this store opened it")
	}
	if contract.ClassOf(err) != contract.Permanent || !strings.Contains(err.Error(), "newer idemsync") {
		t.Fatalf("Lock: %v, want the state refused as written by a newer idemsync", err)
	}
	if who, _, err := waiting.holder(ctx, "orders"); err != nil || who != "" {
		t.Errorf("lease held by %q after the refusal (%v), want it given back", who, err)
	}
}
