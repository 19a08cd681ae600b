package sqlite

import (
	"slices"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
)

// sqliteRows converts a page's values without boxing again the ones it
// stores as they are (integers, reals, text, decimals), checks decimals
// without building them, and carves the rows' values from one block
// (docs/performance.md, "Round four"): what is left per row is the
// timestamp's text and its box. Failed first with 11 allocations per row.
// JSON already compact is stored as given too, boxed once (failed first
// with 3.00 allocations per row once the table had a JSON column).
var testTime = time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)

func TestSQLiteRowsAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	tbl := &contract.Table{Name: "t", Key: []string{"id"}, Columns: []contract.Column{
		{Name: "id", Type: contract.TypeInteger}, {Name: "name", Type: contract.TypeText},
		{Name: "total", Type: contract.TypeNumeric}, {Name: "score", Type: contract.TypeReal},
		{Name: "active", Type: contract.TypeBoolean}, {Name: "at", Type: contract.TypeTimestamp},
		{Name: "tags", Type: contract.TypeJSON}}}
	rows := make([]contract.Row, 1000)
	for i := range rows {
		rows[i] = contract.Row{Values: []any{int64(1000 + i), "name", "12.50", 2.5 + float64(i), true, testTime, `["a","b"]`}}
	}
	st := &sqliteStmts{keyIdx: []int{0}, keyAff: []string{affInteger}, keyDecl: []string{"INTEGER"}}
	var all [][]any
	allocs := testing.AllocsPerRun(5, func() {
		var err error
		if all, err = sqliteRows(tbl, st, rows, false); err != nil {
			t.Fatal(err)
		}
	})
	if per := allocs / float64(len(rows)); per > 2.05 {
		t.Errorf("%.2f allocations per row converted, want at most 2.05", per)
	}
	want := []any{int64(1999), "name", "12.50", 1001.5, int64(1), formatTime(testTime), `["a","b"]`}
	got := all[999]
	if len(got) != len(want) || cap(got) != len(want) {
		t.Fatalf("last row %v (capacity %d)", got, cap(got))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("column %s: %#v, want %#v", tbl.Columns[i].Name, got[i], want[i])
		}
	}
}

// lastOfEachKey keeps the last row of each key; for the usual single
// integer key without building each row's identity text (2 allocations a
// row: docs/performance.md, "Round four"). Failed first with 2,007
// allocations for a page of 1,000 rows.
func TestLastOfEachIntegerKey(t *testing.T) {
	st := &sqliteStmts{keyIdx: []int{1}}
	all := make([][]any, 1000)
	for i := range all {
		all[i] = []any{"x", int64(1000 + i%700)} // the last 300 repeat keys of the first 300
	}
	var kept []int
	allocs := testing.AllocsPerRun(5, func() { kept = lastOfEachKey(st, all) })
	if allocs > 10 {
		t.Errorf("%.0f allocations for a page of %d rows, want at most 10", allocs, len(all))
	}
	if len(kept) != 700 || kept[0] != 300 || kept[399] != 699 || kept[400] != 700 || kept[699] != 999 {
		t.Errorf("kept %d rows: %v … %v", len(kept), kept[:3], kept[len(kept)-3:])
	}
	// A key that is not an integer in one row: every row by its identity,
	// 1 and 1.0 the same key.
	mixed := [][]any{{"a", int64(1)}, {"b", "1"}, {"c", float64(1)}, {"d", "1"}}
	if got := lastOfEachKey(st, mixed); len(got) != 2 || got[0] != 2 || got[1] != 3 {
		t.Errorf("mixed keys: kept %v, want [2 3]", got)
	}
}

// A page whose integer keys come in order, rising or falling (how most
// APIs list records), has no key twice: every row is kept, without a map
// of the page's keys (docs/performance.md, "Round five"). Failed first
// with 9 allocations for a page of 1,000 rows; a key out of order, or
// repeated next to itself, is still found by the map.
func TestLastOfEachIntegerKeyInOrder(t *testing.T) {
	st := &sqliteStmts{keyIdx: []int{0}}
	page := func(key func(i int) int64) [][]any {
		all := make([][]any, 1000)
		for i := range all {
			all[i] = []any{key(i)}
		}
		return all
	}
	for name, all := range map[string][][]any{
		"rising":  page(func(i int) int64 { return int64(10 + 3*i) }),
		"falling": page(func(i int) int64 { return int64(5000 - i) }),
	} {
		var kept []int
		allocs := testing.AllocsPerRun(5, func() { kept = lastOfEachKey(st, all) })
		if allocs > 1 {
			t.Errorf("%s: %.0f allocations for a page of %d rows, want at most 1", name, allocs, len(all))
		}
		if len(kept) != len(all) || kept[0] != 0 || kept[999] != 999 {
			t.Errorf("%s: kept %d rows", name, len(kept))
		}
	}
	for name, tc := range map[string]struct {
		keys []int64
		want []int
	}{
		"repeated next to itself": {[]int64{1, 2, 2, 3}, []int{0, 2, 3}},
		"falling, repeated":       {[]int64{9, 8, 8}, []int{0, 2}},
		"out of order":            {[]int64{1, 3, 2, 1}, []int{1, 2, 3}},
		"one row":                 {[]int64{7}, []int{0}},
	} {
		all := make([][]any, len(tc.keys))
		for i, k := range tc.keys {
			all[i] = []any{k}
		}
		if got := lastOfEachKey(st, all); !slices.Equal(got, tc.want) {
			t.Errorf("%s: kept %v, want %v", name, got, tc.want)
		}
	}
}
