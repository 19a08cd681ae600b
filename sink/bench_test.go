package sink_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/idemsync/idemsync/sink"
	idsync "github.com/idemsync/idemsync/sync"
)

// benchPages returns total rows of benchTable in pages of size.
func benchPages(total, size int) [][]idsync.Row {
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	pages := make([][]idsync.Row, 0, total/size)
	for p := 0; p < total/size; p++ {
		page := make([]idsync.Row, size)
		for i := range page {
			n := int64(p*size + i)
			page[i] = row(n, fmt.Sprintf("customer %d", n), fmt.Sprintf("%d.%02d", n, n%100),
				n%2 == 0, base.Add(time.Duration(n)*time.Second), fmt.Sprintf(`{"n":%d,"tags":["a","b"]}`, n))
		}
		pages = append(pages, page)
	}
	return pages
}

// benchTable is a table with one column of most types, keyed by id.
func benchTable(schema, name string) *idsync.Table {
	return &idsync.Table{Schema: schema, Name: name, Key: []string{"id"}, Create: true, Columns: []idsync.Column{
		col("id", idsync.TypeInteger), col("name", idsync.TypeText), col("amount", idsync.TypeNumeric),
		col("active", idsync.TypeBoolean), col("updated_at", idsync.TypeTimestamp), col("payload", idsync.TypeJSON)}}
}

// BenchmarkSQLiteUpsert upserts 100,000 records in pages of 1,000 into an
// SQLite file and reports records/s for a first load and an unchanged
// re-sync.
func BenchmarkSQLiteUpsert(b *testing.B) {
	const total, pageSize = 100_000, 1_000
	ctx := context.Background()
	pages := benchPages(total, pageSize)
	s, err := sink.OpenSQLite(ctx, filepath.Join(b.TempDir(), "bench.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	load := func(b *testing.B, tbl *idsync.Table) idsync.Counts {
		var sum idsync.Counts
		for _, page := range pages {
			n, err := s.Upsert(ctx, tbl, page)
			if err != nil {
				b.Fatal(err)
			}
			sum.Add(n)
		}
		return sum
	}
	b.Run("first_load", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			tbl := benchTable("", fmt.Sprintf("first_%d_%s", i, randomHex(3)))
			if err := s.Prepare(ctx, tbl); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if n := load(b, tbl); n.Inserted != total {
				b.Fatalf("inserted %d, want %d", n.Inserted, total)
			}
		}
		b.ReportMetric(float64(total)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	})
	b.Run("unchanged", func(b *testing.B) {
		tbl := benchTable("", "unchanged")
		if err := s.Prepare(ctx, tbl); err != nil {
			b.Fatal(err)
		}
		load(b, tbl)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if n := load(b, tbl); n.Unchanged != total {
				b.Fatalf("unchanged %d, want %d", n.Unchanged, total)
			}
		}
		b.ReportMetric(float64(total)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	})
}
