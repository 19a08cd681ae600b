package sinktest

import (
	"fmt"
	"time"

	"github.com/idemsync/idemsync/contract"
)

// BenchPages returns total rows of BenchTable in pages of size.
func BenchPages(total, size int) [][]contract.Row {
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	pages := make([][]contract.Row, 0, total/size)
	for p := 0; p < total/size; p++ {
		page := make([]contract.Row, size)
		for i := range page {
			n := int64(p*size + i)
			page[i] = Row(n, fmt.Sprintf("customer %d", n), fmt.Sprintf("%d.%02d", n, n%100),
				n%2 == 0, base.Add(time.Duration(n)*time.Second), fmt.Sprintf(`{"n":%d,"tags":["a","b"]}`, n))
		}
		pages = append(pages, page)
	}
	return pages
}

// BenchTable is a table with one column of most types, keyed by id.
func BenchTable(schema, name string) *contract.Table {
	return &contract.Table{Schema: schema, Name: name, Key: []string{"id"}, Create: true, Columns: []contract.Column{
		Col("id", contract.TypeInteger), Col("name", contract.TypeText), Col("amount", contract.TypeNumeric),
		Col("active", contract.TypeBoolean), Col("updated_at", contract.TypeTimestamp), Col("payload", contract.TypeJSON)}}
}
