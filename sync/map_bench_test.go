package sync

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/idemsync/idemsync/contract"
)

// benchPage is a page of n records shaped like the bench's example API
// (go run ./bench), and the table of its columns.
func benchPage(n int) ([]gjson.Result, *contract.Table) {
	var b strings.Builder
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"Order %d","customer":{"email":"c%d@example.com","tier":"gold"},"total":"%d.%02d","active":%t,"updated_at":"2024-01-01T00:%02d:%02dZ","tags":["a","b%d"]}`,
			i+1, i+1, i%97, i*7, i%100, i%2 == 0, i/60%60, i%60, i%5)
	}
	b.WriteByte(']')
	t := &contract.Table{Name: "orders", Key: []string{"id"}, Columns: []contract.Column{
		{Name: "id", Path: "id", Type: contract.TypeInteger},
		{Name: "name", Path: "name", Type: contract.TypeText},
		{Name: "email", Path: "customer.email", Type: contract.TypeText},
		{Name: "total", Path: "total", Type: contract.TypeNumeric},
		{Name: "active", Path: "active", Type: contract.TypeBoolean},
		{Name: "updated_at", Path: "updated_at", Type: contract.TypeTimestamp},
		{Name: "tags", Path: "tags", Type: contract.TypeJSON},
	}}
	return gjson.Parse(b.String()).Array(), t
}

// BenchmarkMapPage maps a page of 1,000 records: the allocations per
// record of the mapping path (go test ./sync -bench MapPage -benchmem;
// docs/performance.md, "Round four").
func BenchmarkMapPage(b *testing.B) {
	recs, t := benchPage(1000)
	b.ReportAllocs()
	for b.Loop() {
		m := Mapper{Table: t}
		for i, rec := range recs {
			if _, err := m.Map(i, rec); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// The values of a page's rows come from blocks shared by many rows, not
// one allocation per row (docs/performance.md, "Round four"). What is
// left per record: the values boxed in their interfaces (an integer, two
// texts, a decimal, a timestamp, JSON) and the hash's text, 7. Failed
// first with 7.78 allocations per record.
func TestMapAllocationsPerRecord(t *testing.T) {
	recs, tbl := benchPage(1000)
	allocs := testing.AllocsPerRun(5, func() {
		m := Mapper{Table: tbl}
		for i, rec := range recs {
			if _, err := m.Map(i, rec); err != nil {
				t.Fatal(err)
			}
		}
	})
	if per := allocs / float64(len(recs)); per > 7.05 {
		t.Errorf("%.2f allocations per record mapped, want at most 7.05", per)
	}
	// Rows do not share their values: growing one (PadRows) leaves the
	// next as it was.
	m := Mapper{Table: tbl}
	a, _ := m.Map(0, recs[0])
	b, _ := m.Map(1, recs[1])
	a.Values = append(a.Values, "added")
	if b.Values[0] != int64(2) || len(b.Values) != len(tbl.Columns) {
		t.Errorf("the next row's values after growing one: %v", b.Values)
	}
}
