package postgres_test

import (
	"testing"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sinktest"
)

// An unchanged re-sync writes nothing: no row of the page is even locked
// (ON CONFLICT … DO UPDATE … WHERE locks the row it then leaves, which
// sets its xmax and writes WAL), on a keep table and on a soft one; a
// marked row whose key came back is still unmarked, and a changed row
// still updated.
func TestUnchangedUpsertLocksNothing(t *testing.T) {
	b := newPostgresBackend(t)
	for _, mode := range []string{contract.DeletesKeep, contract.DeletesSoft} {
		t.Run(mode, func(t *testing.T) {
			s, tbl := b.Sink(t), sinktest.People(b)
			tbl.Name += "_" + mode
			tbl.Deletes = mode
			sinktest.MustPrepare(t, s, tbl)
			rows := []contract.Row{sinktest.Row("a", "a", int64(1)), sinktest.Row("b", "b", int64(1))}
			sinktest.MustUpsert(t, s, tbl, contract.Counts{Inserted: 2}, rows...)
			// The re-sync is a later run: its own sink, prepared again.
			s = b.Sink(t)
			sinktest.MustPrepare(t, s, tbl)
			sinktest.MustUpsert(t, s, tbl, contract.Counts{Unchanged: 2}, rows...)
			if got := b.Rows(t, "SELECT count(*) FROM "+sinktest.QName(tbl)+" WHERE xmax <> 0"); got[0][0] != int64(0) {
				t.Errorf("%v rows locked or written by an unchanged upsert, want none", got[0][0])
			}
			if mode == contract.DeletesSoft {
				b.Exec(t, "UPDATE "+sinktest.QName(tbl)+" SET _idemsync_deleted_at = now() WHERE id = 'a'")
				sinktest.MustUpsert(t, s, tbl, contract.Counts{Updated: 1, Unchanged: 1}, rows...)
				if got := b.Rows(t, "SELECT count(*) FROM "+sinktest.QName(tbl)+" WHERE _idemsync_deleted_at IS NOT NULL"); got[0][0] != int64(0) {
					t.Errorf("the marked row stayed marked after its key came back")
				}
			}
			sinktest.MustUpsert(t, s, tbl, contract.Counts{Updated: 1, Unchanged: 1}, sinktest.Row("a", "a2", int64(1)), rows[1])
		})
	}
}
