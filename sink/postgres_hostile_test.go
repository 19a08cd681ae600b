package sink_test

import (
	"context"
	"fmt"
	gosync "sync"
	"testing"

	"github.com/idemsync/idemsync/sink"
	idsync "github.com/idemsync/idemsync/sync"
)

// Several first runs at once create the same missing table: every one of
// them succeeds (CREATE TABLE IF NOT EXISTS alone races on the catalog and
// fails one of them with a duplicate pg_type entry).
func TestPostgresParallelCreate(t *testing.T) {
	b := newPostgresBackend(t)
	const n = 8
	for round := 0; round < 5; round++ {
		tbl := b.table(fmt.Sprintf("race_%d", round), []string{"id"},
			idsync.Column{Name: "id", Path: "id", Type: idsync.TypeInteger},
			idsync.Column{Name: "name", Path: "name", Type: idsync.TypeText})
		sinks := make([]idsync.Sink, n)
		for i := range sinks {
			sinks[i] = b.open(t)
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
		mustUpsert(t, sinks[0], tbl, idsync.Counts{Inserted: 1}, row(int64(1), "a"))
	}
}

// A BEFORE trigger that returns NULL makes the database keep a row out of
// the table although the statement succeeds: such rows count as Dropped,
// never as unchanged, whether the trigger stops an insert or an update.
func TestPostgresTriggerDropsRows(t *testing.T) {
	b := newPostgresBackend(t)
	s := b.open(t)
	tbl := b.table("dropped", []string{"id"},
		idsync.Column{Name: "id", Path: "id", Type: idsync.TypeInteger},
		idsync.Column{Name: "name", Path: "name", Type: idsync.TypeText})
	mustPrepare(t, s, tbl)
	fn := sink.QuoteIdent(b.schema) + ".drop_odd"
	b.exec(t, `CREATE FUNCTION `+fn+`() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF NEW.id % 2 = 1 THEN RETURN NULL; END IF; RETURN NEW; END $$`)
	b.exec(t, `CREATE TRIGGER drop_odd BEFORE INSERT OR UPDATE ON `+qname(tbl)+` FOR EACH ROW EXECUTE FUNCTION `+fn+`()`)
	mustUpsert(t, s, tbl, idsync.Counts{Inserted: 2, Dropped: 2},
		row(int64(1), "a"), row(int64(2), "b"), row(int64(3), "c"), row(int64(4), "d"))
	// Same content again: the stored rows are unchanged, the dropped ones
	// dropped again.
	mustUpsert(t, s, tbl, idsync.Counts{Unchanged: 2, Dropped: 2},
		row(int64(1), "a"), row(int64(2), "b"), row(int64(3), "c"), row(int64(4), "d"))
	// A stored row whose update the trigger refuses: dropped, not unchanged.
	b.exec(t, `ALTER TABLE `+qname(tbl)+` DISABLE TRIGGER drop_odd`)
	mustUpsert(t, s, tbl, idsync.Counts{Inserted: 1}, row(int64(5), "e"))
	b.exec(t, `ALTER TABLE `+qname(tbl)+` ENABLE TRIGGER drop_odd`)
	mustUpsert(t, s, tbl, idsync.Counts{Updated: 1, Dropped: 1}, row(int64(5), "E"), row(int64(2), "B"))
}

// With a trigger present, a row the version guard keeps from overwriting a
// newer one is unchanged, not dropped.
func TestPostgresTriggerVersionGuard(t *testing.T) {
	b := newPostgresBackend(t)
	s := b.open(t)
	tbl := b.table("guarded", []string{"id"},
		idsync.Column{Name: "id", Path: "id", Type: idsync.TypeInteger},
		idsync.Column{Name: "v", Path: "v", Type: idsync.TypeInteger})
	tbl.Version = "v"
	mustPrepare(t, s, tbl)
	fn := sink.QuoteIdent(b.schema) + ".keep_all"
	b.exec(t, `CREATE FUNCTION `+fn+`() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$`)
	b.exec(t, `CREATE TRIGGER keep_all BEFORE INSERT OR UPDATE ON `+qname(tbl)+` FOR EACH ROW EXECUTE FUNCTION `+fn+`()`)
	mustUpsert(t, s, tbl, idsync.Counts{Inserted: 1}, row(int64(1), int64(5)))
	mustUpsert(t, s, tbl, idsync.Counts{Unchanged: 1}, row(int64(1), int64(4)))
	mustUpsert(t, s, tbl, idsync.Counts{Updated: 1}, row(int64(1), int64(6)))
}
