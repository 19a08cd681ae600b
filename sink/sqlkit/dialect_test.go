package sqlkit

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
)

// ParentQuery numbers its arguments in the order it binds them, bounds
// the key as a row value, and stops at the first key argument it cannot
// bind.
func TestParentQuery(t *testing.T) {
	d := Dialect{
		Param:     func(n int) string { return fmt.Sprintf("$%d", n) },
		AsText:    func(c string) string { return c + "::text" },
		AtOrAfter: func(c, p string) string { return c + " >= " + p },
	}
	tbl := &contract.Table{Schema: "s", Name: "orders", Key: []string{"a", "b"}, Deletes: contract.DeletesSoft}
	since := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	key := func(i int, v any, p string) (string, any, error) { return p + "::k" + fmt.Sprint(i), v, nil }
	q, args, err := ParentQuery(d, tbl, []string{"a", "code"}, contract.ParentFilter{Since: since, From: []any{1, "x"}, After: []any{2, "y"}, Limit: 10}, false, "SINCE", key)
	want := `SELECT "a"::text, "code"::text FROM "s"."orders" WHERE "_idemsync_synced_at" >= $1 AND "_idemsync_deleted_at" IS NULL` +
		` AND ("a", "b") >= ($2::k0, $3::k1) AND ("a", "b") > ($4::k0, $5::k1) ORDER BY "a", "b" LIMIT 10`
	if err != nil || q != want || !slices.Equal(args, []any{"SINCE", 1, "x", 2, "y"}) {
		t.Fatalf("query\n%s\n%v, %v\nwant\n%s", q, args, err, want)
	}
	q, args, _ = ParentQuery(d, &contract.Table{Name: "p", Key: []string{"id"}}, []string{"id"}, contract.ParentFilter{}, false, nil, key)
	if q != `SELECT "id"::text FROM "p" ORDER BY "id"` || len(args) != 0 {
		t.Errorf("unfiltered: %s %v", q, args)
	}
	// A table with marks whose deletes is no longer soft: its marked rows
	// are still gone (docs/deletions.md, "target.deletes").
	q, _, _ = ParentQuery(d, &contract.Table{Name: "p", Key: []string{"id"}, Deletes: contract.DeletesKeep}, []string{"id"}, contract.ParentFilter{}, true, nil, key)
	if q != `SELECT "id"::text FROM "p" WHERE "_idemsync_deleted_at" IS NULL ORDER BY "id"` {
		t.Errorf("marks on a keep table: %s", q)
	}
	boom := errors.New("bad key")
	if _, _, err := ParentQuery(d, tbl, []string{"a"}, contract.ParentFilter{To: []any{1, 2}}, false, nil,
		func(int, any, string) (string, any, error) { return "", nil, boom }); !errors.Is(err, boom) {
		t.Errorf("key error: %v", err)
	}
}
