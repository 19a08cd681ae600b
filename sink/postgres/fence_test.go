package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/idemsync/idemsync/contract"
)

// A page fenced with a token commits; a page fenced with a lower token of
// the same key is refused (exit 4) and writes no row; another key is
// fenced apart; an error from before rolls the page back
// (docs/guarantees.md, "Fenced targets").
func TestFencedUpsert(t *testing.T) {
	b := newPostgresBackend(t)
	ctx := context.Background()
	s, err := b.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ts, ok := s.(contract.TxSink)
	if !ok {
		t.Fatal("the PostgreSQL sink is no contract.TxSink")
	}
	tbl := &contract.Table{Schema: b.Schema, Name: "fenced", Key: []string{"id"}, Create: true,
		Columns: []contract.Column{{Name: "id", Type: contract.TypeInteger}, {Name: "v", Type: contract.TypeText}}}
	if err := s.Prepare(ctx, tbl); err != nil {
		t.Fatal(err)
	}
	write := func(id int64, key string, token int64) error {
		_, err := ts.UpsertIn(ctx, tbl, []contract.Row{{Values: []any{id, "x"}, Hash: "h"}},
			func(ctx context.Context, tx contract.PageTx, n contract.Counts) error {
				if n.Inserted != 1 {
					t.Errorf("counts before the commit: %+v", n)
				}
				return tx.Fence(ctx, key, token)
			})
		return err
	}
	count := func() int64 {
		return b.Rows(t, `SELECT count(*) FROM "`+b.Schema+`".fenced`)[0][0].(int64)
	}
	if err := write(1, "state/orders", 5); err != nil {
		t.Fatal(err)
	}
	if err := write(2, "state/orders", 5); err != nil {
		t.Fatalf("the same token again: %v", err)
	}
	err = write(3, "state/orders", 4)
	if !errors.Is(err, contract.ErrLocked) || contract.ClassOf(err) != contract.Locked {
		t.Fatalf("a superseded token: %v, want a Locked refusal", err)
	}
	if n := count(); n != 2 {
		t.Errorf("%d rows after the refused page, want 2", n)
	}
	if err := write(4, "state/customers", 1); err != nil {
		t.Fatalf("another key: %v", err)
	}
	boom := errors.New("boom")
	_, err = ts.UpsertIn(ctx, tbl, []contract.Row{{Values: []any{int64(5), "x"}, Hash: "h"}},
		func(context.Context, contract.PageTx, contract.Counts) error { return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("before's error: %v", err)
	}
	if n := count(); n != 3 {
		t.Errorf("%d rows, want 3 (the page whose before failed rolled back)", n)
	}
}
