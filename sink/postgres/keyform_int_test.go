package postgres

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/idemsync/idemsync/contract"
)

// intKeyTable is a table keyed by one integer column, the usual key.
func intKeyTable() *contract.Table {
	return &contract.Table{Name: "t", Key: []string{"id"}, Columns: []contract.Column{
		{Name: "v", Type: contract.TypeText}, {Name: "id", Type: contract.TypeInteger}}}
}

// With one integer key, canonicalKeys keeps what contract.Dedupe keeps
// (the last row of each key, in the order of those last rows), whatever
// the page: keys in order, shuffled, repeated, a key not an int64 (an
// int, a NULL) among them.
func TestCanonicalKeysIntegerKeyAsDedupe(t *testing.T) {
	tbl := intKeyTable()
	rnd := rand.New(rand.NewPCG(1, 2))
	for round := range 300 {
		n := rnd.IntN(40)
		rows := make([]contract.Row, n)
		for i := range rows {
			var k any = int64(i)
			switch round % 5 {
			case 1:
				k = int64(rnd.IntN(n + 1)) // repeated keys
			case 2:
				k = int64(n - i) // descending
			case 3:
				k = []any{int64(rnd.IntN(5)), 3, nil, "3"}[rnd.IntN(4)] // Go types Dedupe tells apart
			case 4:
				k = int64(rnd.IntN(3)) - 1 // negative and zero, many repeats
			}
			rows[i] = contract.Row{Values: []any{fmt.Sprint("row ", i), k}, Hash: fmt.Sprint(i)}
		}
		got, gotDropped := canonicalKeys(tbl, rows, keyForm)
		want, wantDropped := contract.Dedupe(tbl, rows)
		if gotDropped != wantDropped || !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d, keys %v:\ncanonicalKeys %v (%d dropped)\nDedupe        %v (%d dropped)",
				round, keysOf(rows), got, gotDropped, want, wantDropped)
		}
	}
}

func keysOf(rows []contract.Row) []any {
	out := make([]any, len(rows))
	for i, r := range rows {
		out[i] = r.Values[1]
	}
	return out
}

// Deduplicating a page by one integer key allocates next to nothing per
// row: contract.Dedupe's key text (fmt.Fprintf of each key) was 2 of a
// first load's allocations a row and about 5% of its bytes
// (docs/performance.md, "Round five").
func TestCanonicalKeysIntegerKeyAllocations(t *testing.T) {
	tbl := intKeyTable()
	for _, order := range []string{"ascending", "shuffled"} {
		rows := make([]contract.Row, 1000)
		for i := range rows {
			rows[i] = contract.Row{Values: []any{"v", int64(1000 + i)}}
		}
		if order == "shuffled" {
			rand.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
		}
		allocs := testing.AllocsPerRun(5, func() { canonicalKeys(tbl, rows, keyForm) })
		if perRow := allocs / float64(len(rows)); perRow > 0.05 {
			t.Errorf("%s keys: canonicalKeys allocates %.2f objects a row, want at most 0.05", order, perRow)
		}
	}
}
