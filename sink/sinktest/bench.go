package sinktest

import (
	"fmt"
	"time"

	idsync "github.com/idemsync/idemsync/sync"
)

// BenchPages returns total rows of BenchTable in pages of size.
func BenchPages(total, size int) [][]idsync.Row {
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	pages := make([][]idsync.Row, 0, total/size)
	for p := 0; p < total/size; p++ {
		page := make([]idsync.Row, size)
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
func BenchTable(schema, name string) *idsync.Table {
	return &idsync.Table{Schema: schema, Name: name, Key: []string{"id"}, Create: true, Columns: []idsync.Column{
		Col("id", idsync.TypeInteger), Col("name", idsync.TypeText), Col("amount", idsync.TypeNumeric),
		Col("active", idsync.TypeBoolean), Col("updated_at", idsync.TypeTimestamp), Col("payload", idsync.TypeJSON)}}
}
