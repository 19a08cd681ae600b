package postgres_test

import (
	"context"
	"fmt"
	gosync "sync"
	"testing"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sinktest"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

// Several first runs at once create the same missing table: every one of
// them succeeds (CREATE TABLE IF NOT EXISTS alone races on the catalog and
// fails one of them with a duplicate pg_type entry).
func TestPostgresParallelCreate(t *testing.T) {
	b := newPostgresBackend(t)
	const n = 8
	for round := 0; round < 5; round++ {
		tbl := b.Table(fmt.Sprintf("race_%d", round), []string{"id"},
			contract.Column{Name: "id", Path: "id", Type: contract.TypeInteger},
			contract.Column{Name: "name", Path: "name", Type: contract.TypeText})
		sinks := make([]contract.Sink, n)
		for i := range sinks {
			sinks[i] = b.Sink(t)
		}
		errs := make([]error, n)
		var wg gosync.WaitGroup
		for i := range sinks {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				tb := *tbl
				errs[i] = sinks[i].Prepare(context.Background(), &tb)
			}(i)
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: prepare %d of %d parallel first runs: %v", round, i, n, err)
			}
		}
		sinktest.MustUpsert(t, sinks[0], tbl, contract.Counts{Inserted: 1}, sinktest.Row(int64(1), "a"))
	}
}

// A BEFORE trigger that returns NULL makes the database keep a row out of
// the table although the statement succeeds: such rows count as Dropped,
// never as unchanged, whether the trigger stops an insert or an update.
func TestPostgresTriggerDropsRows(t *testing.T) {
	b := newPostgresBackend(t)
	s := b.Sink(t)
	tbl := b.Table("dropped", []string{"id"},
		contract.Column{Name: "id", Path: "id", Type: contract.TypeInteger},
		contract.Column{Name: "name", Path: "name", Type: contract.TypeText})
	sinktest.MustPrepare(t, s, tbl)
	fn := sqlkit.QuoteIdent(b.Schema) + ".drop_odd"
	b.Exec(t, `CREATE FUNCTION `+fn+`() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF NEW.id % 2 = 1 THEN RETURN NULL; END IF; RETURN NEW; END $$`)
	b.Exec(t, `CREATE TRIGGER drop_odd BEFORE INSERT OR UPDATE ON `+sinktest.QName(tbl)+` FOR EACH ROW EXECUTE FUNCTION `+fn+`()`)
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Inserted: 2, Dropped: 2},
		sinktest.Row(int64(1), "a"), sinktest.Row(int64(2), "b"), sinktest.Row(int64(3), "c"), sinktest.Row(int64(4), "d"))
	// Same content again: the stored rows are unchanged, the dropped ones
	// dropped again.
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Unchanged: 2, Dropped: 2},
		sinktest.Row(int64(1), "a"), sinktest.Row(int64(2), "b"), sinktest.Row(int64(3), "c"), sinktest.Row(int64(4), "d"))
	// A stored row whose update the trigger refuses: dropped, not unchanged.
	b.Exec(t, `ALTER TABLE `+sinktest.QName(tbl)+` DISABLE TRIGGER drop_odd`)
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Inserted: 1}, sinktest.Row(int64(5), "e"))
	b.Exec(t, `ALTER TABLE `+sinktest.QName(tbl)+` ENABLE TRIGGER drop_odd`)
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Updated: 1, Dropped: 1}, sinktest.Row(int64(5), "E"), sinktest.Row(int64(2), "B"))
}

// With a trigger present, a row the version guard keeps from overwriting a
// newer one is unchanged, not dropped.
func TestPostgresTriggerVersionGuard(t *testing.T) {
	b := newPostgresBackend(t)
	s := b.Sink(t)
	tbl := b.Table("guarded", []string{"id"},
		contract.Column{Name: "id", Path: "id", Type: contract.TypeInteger},
		contract.Column{Name: "v", Path: "v", Type: contract.TypeInteger})
	tbl.Version = "v"
	sinktest.MustPrepare(t, s, tbl)
	fn := sqlkit.QuoteIdent(b.Schema) + ".keep_all"
	b.Exec(t, `CREATE FUNCTION `+fn+`() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$`)
	b.Exec(t, `CREATE TRIGGER keep_all BEFORE INSERT OR UPDATE ON `+sinktest.QName(tbl)+` FOR EACH ROW EXECUTE FUNCTION `+fn+`()`)
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Inserted: 1}, sinktest.Row(int64(1), int64(5)))
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Unchanged: 1}, sinktest.Row(int64(1), int64(4)))
	sinktest.MustUpsert(t, s, tbl, contract.Counts{Updated: 1}, sinktest.Row(int64(1), int64(6)))
}
