package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sinktest"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

// Key columns whose recorded forms are not the one form of a value: under
// a nondeterministic collation "BOB" and "bob" name one row, and a numeric
// "1.0" and "1" do too. The pass's distinct keys matching the live rows in
// number then proves nothing: the sweep loads the keys and removes the row
// no key names (contract.SweepRequest.SeenLive), also when the pass's
// tally of live rows (LiveTally) stands for the count.
func TestSweepSeenLiveInexactKeys(t *testing.T) {
	ctx := context.Background()
	b := newPostgresBackend(t)
	ci := sqlkit.QuoteIdent(b.Schema) + ".ci_seen"
	b.Exec(t, "CREATE COLLATION "+ci+" (provider = icu, locale = 'und-u-ks-level2', deterministic = false)")
	for _, tc := range []struct {
		name, decl string
		typ        contract.ColumnType
		live, gone string
		seen       []string
	}{
		{"collation", "text COLLATE " + ci, contract.TypeText, "Bob", "gone", []string{"BOB", "bob"}},
		{"numeric", "numeric", contract.TypeNumeric, "1", "2", []string{"1.0", "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := b.Sink(t)
			tbl := b.Table("seen_"+tc.name, []string{"id"}, sinktest.Col("id", tc.typ), sinktest.Col("v", contract.TypeText))
			tbl.Create, tbl.Deletes = false, contract.DeletesHard
			b.Exec(t, "CREATE TABLE "+sinktest.QName(tbl)+" (id "+strings.Fields(tc.decl)[0]+" PRIMARY KEY, v text, _idemsync_hash text, _idemsync_synced_at timestamptz)")
			sinktest.MustPrepare(t, s, tbl)
			// Prepare refuses a key under a nondeterministic collation (checkKeyCollation): it comes by hand after it.
			b.Exec(t, "ALTER TABLE "+sinktest.QName(tbl)+" ALTER COLUMN id TYPE "+tc.decl)
			sinktest.MustUpsert(t, s, tbl, contract.Counts{Inserted: 2}, sinktest.Row(tc.live, "1"), sinktest.Row(tc.gone, "1"))
			time.Sleep(3 * time.Millisecond) // the prior pass starts after the rows were written
			prior := time.Now()
			var seen []contract.Row
			for _, k := range tc.seen {
				seen = append(seen, sinktest.Row(k, "1"))
			}
			sw := s.(contract.Sweeper)
			keys, err := sw.KeyForms(ctx, tbl, seen)
			if err != nil {
				t.Fatal(err)
			}
			res, err := sw.Sweep(ctx, tbl, contract.SweepRequest{Mode: contract.DeletesHard, MaxRatio: 1, LiveBefore: -1, SeenLive: 2, LiveTally: 2,
				Keys: func(fn func(string) error) error {
					for _, k := range keys {
						if err := fn(k); err != nil {
							return err
						}
					}
					return nil
				},
				Prior: func(fn func(string) error) error { return nil }, PriorStart: prior, PriorLiveBefore: -1})
			if err != nil || res.Deleted != 1 {
				t.Fatalf("sweep: %+v, %v; want the row no key names removed", res, err)
			}
			if got := b.Rows(t, "SELECT count(*) FROM "+sinktest.QName(tbl)); got[0][0] != int64(1) {
				t.Errorf("rows left: %v, want 1", got[0][0])
			}
		})
	}
}
