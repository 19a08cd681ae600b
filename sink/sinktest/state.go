package sinktest

import (
	"context"
	"testing"

	"github.com/idemsync/idemsync/contract"
)

// tableState checks that TableState tells a missing table from an empty
// one and from one with rows, and changes nothing.
func tableState(t *testing.T, b *DB) {
	ctx := context.Background()
	s := b.Sink(t)
	tbl := b.Table("Orders State", []string{"id"}, contract.Column{Name: "id", Path: "id", Type: contract.TypeInteger})
	check := func(step string, wantExists, wantEmpty bool) {
		t.Helper()
		exists, empty, err := s.TableState(ctx, tbl)
		if err != nil || exists != wantExists || empty != wantEmpty {
			t.Fatalf("%s: TableState = exists %v, empty %v, %v; want %v, %v", step, exists, empty, err, wantExists, wantEmpty)
		}
	}
	check("missing", false, true)
	bare := *tbl
	bare.Columns = nil // columns inferred and not known yet
	if exists, _, err := s.TableState(ctx, &bare); err != nil || exists {
		t.Fatalf("TableState without columns = %v, %v", exists, err)
	}
	check("missing, asked again (nothing was created)", false, true)
	MustPrepare(t, s, tbl)
	check("created", true, true)
	MustUpsert(t, s, tbl, contract.Counts{Inserted: 1}, Row(int64(1)))
	check("one row", true, false)
	b.Exec(t, "DELETE FROM "+QName(tbl))
	check("emptied", true, true)
}
