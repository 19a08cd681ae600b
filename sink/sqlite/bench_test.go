package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sinktest"
	"github.com/idemsync/idemsync/sink/sqlite"
)

// BenchmarkSQLiteUpsert upserts 100,000 records in pages of 1,000 into an
// SQLite file and reports records/s for a first load, an unchanged
// re-sync, and an unchanged re-sync with Table.Verify (run --verify).
func BenchmarkSQLiteUpsert(b *testing.B) {
	const total, pageSize = 100_000, 1_000
	ctx := context.Background()
	pages := sinktest.BenchPages(total, pageSize)
	s, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "bench.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	load := func(b *testing.B, tbl *contract.Table) contract.Counts {
		var sum contract.Counts
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
			tbl := sinktest.BenchTable("", fmt.Sprintf("first_%d_%s", i, sinktest.RandomHex(3)))
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
		tbl := sinktest.BenchTable("", "unchanged")
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
	b.Run("verify_unchanged", func(b *testing.B) {
		tbl := sinktest.BenchTable("", "verify_unchanged")
		if err := s.Prepare(ctx, tbl); err != nil {
			b.Fatal(err)
		}
		load(b, tbl)
		tbl = sinktest.Verifying(tbl)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if n := load(b, tbl); n.Unchanged != total {
				b.Fatalf("unchanged %d, want %d", n.Unchanged, total)
			}
		}
		b.ReportMetric(float64(total)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	})
}

// BenchmarkSQLiteSweep sweeps a table of 200,000 rows against the keys
// of all of them (nothing to remove: the cost every full pass pays) and
// reports rows/s.
func BenchmarkSQLiteSweep(b *testing.B) {
	const total, pageSize = 200_000, 1_000
	ctx := context.Background()
	pages := sinktest.BenchPages(total, pageSize)
	s, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "bench.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	tbl := sinktest.BenchTable("", "sweep")
	tbl.Deletes = contract.DeletesHard
	if err := s.Prepare(ctx, tbl); err != nil {
		b.Fatal(err)
	}
	var keys []string
	for _, page := range pages {
		if _, err := s.Upsert(ctx, tbl, page); err != nil {
			b.Fatal(err)
		}
		k, err := s.KeyForms(ctx, tbl, page)
		if err != nil {
			b.Fatal(err)
		}
		keys = append(keys, k...)
	}
	req := contract.SweepRequest{Mode: contract.DeletesHard, MaxRatio: 0.5, Keys: func(fn func(string) error) error {
		for _, k := range keys {
			if err := fn(k); err != nil {
				return err
			}
		}
		return nil
	}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := s.Sweep(ctx, tbl, req)
		if err != nil || res.Deleted != 0 || res.Pending != 0 {
			b.Fatalf("sweep: %+v, %v", res, err)
		}
	}
	b.ReportMetric(float64(total)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
