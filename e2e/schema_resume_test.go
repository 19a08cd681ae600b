package e2e

import (
	"testing"
)

// A run killed after its first page's checkpoint and continued reports
// the whole pass's schema discards and changes, as it reports the whole
// pass's inserted and skipped (docs/job-file.md, "The schema contract"):
// the page before the kill discarded a new field and a value (or the
// record, or widened the column), the page after it another. With IDEMSYNC_TEST_STATE=postgres
// the counts are carried by the state in PostgreSQL.
func TestSchemaDiscardsResumed(t *testing.T) {
	for _, db := range widenDBs {
		for _, mode := range []string{"discard_value", "discard_row", "widen"} {
			t.Run(db+"/"+mode, func(t *testing.T) {
				dir, _, api, job := contractSetup(t, db, "    new_columns: discard\n    type_change: "+mode+"\n")
				api.set(4, `{"id":5,"name":"changed5","price":5.5,"tags":["a"]}`)
				api.set(14, `{"id":15,"name":"changed15","price":15.5,"tags":["b"]}`)
				k := idemsync(t, dir, []string{"IDEMSYNC_TEST_FAILPOINT=checkpoint-committed:1"}, "run", job)
				if k.code != -1 && k.code != 137 {
					t.Fatalf("run with failpoint: exit %d, want killed: %s", k.code, k.stderr)
				}
				outliveKilledLease()
				r := runContract(t, dir, job, 0)
				d := r.SchemaDiscards
				switch {
				case d == nil:
					t.Fatalf("the continued run reports no schema_discards, want both pages'")
				case mode == "discard_value" && (d.NewFields != 2 || d.Values != 2 || d.Rows != 0 || r.Skipped != 0):
					t.Errorf("schema_discards %+v, skipped %d; want 2 new fields and 2 values of the whole pass, none skipped", *d, r.Skipped)
				case mode == "discard_row" && (d.Rows != 2 || d.NewFields != 0 || r.Skipped != 2):
					t.Errorf("schema_discards %+v, skipped %d; want the 2 records of the whole pass dead-lettered", *d, r.Skipped)
				case mode == "widen" && (d.NewFields != 2 || d.Values != 0 || d.Rows != 0):
					t.Errorf("schema_discards %+v; want the 2 new fields of the whole pass", *d)
				}
				// Under widen, the page before the kill widened price: the
				// continued run reports it.
				if wantChange := mode == "widen"; wantChange != (len(r.SchemaChanges) == 1) ||
					wantChange && (r.SchemaChanges[0].Column != "price" || r.SchemaChanges[0].To != "numeric") {
					t.Errorf("%s: schema_changes %+v, want price widened only under widen", mode, r.SchemaChanges)
				}
				if st := statusOf(t, dir, job); st.DeadLetters != 2 {
					t.Errorf("%d dead letters, want one a discarding record", st.DeadLetters)
				}
			})
		}
	}
}
