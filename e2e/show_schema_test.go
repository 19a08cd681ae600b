package e2e

import (
	"encoding/json"
	"strings"
	"testing"
)

// show lists the schema changes the job's pages made, newest first, as
// status --schema-changes does: in --json as schema_changes, in the text
// after the rows (docs/operations.md, "show"). With
// IDEMSYNC_TEST_STATE=postgres they come from the state in PostgreSQL.
func TestShowSchemaChanges(t *testing.T) {
	for _, db := range widenDBs {
		t.Run(db, func(t *testing.T) {
			dir, _, api, job := contractSetup(t, db, "    type_change: widen\n")
			api.set(14, `{"id":15,"name":"changed15","price":79.19}`)
			runContract(t, dir, job, 0)
			want := schemaChangesOf(t, dir, job)
			if len(want) != 4 || want[0].Column != "price" {
				t.Fatalf("status --schema-changes %+v, want the widening newest of 4", want)
			}

			r := idemsync(t, dir, nil, "show", job, "--json", "--limit", "1")
			var shown struct {
				Rows   []map[string]*string `json:"rows"`
				Schema []schemaChangeJSON   `json:"schema_changes"`
			}
			if r.code != 0 || json.Unmarshal([]byte(r.stdout), &shown) != nil {
				t.Fatalf("show --json: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			if len(shown.Rows) != 1 || len(shown.Schema) != len(want) {
				t.Fatalf("show --json: %d rows, schema_changes %+v; want 1 row and status's %+v", len(shown.Rows), shown.Schema, want)
			}
			for i := range want {
				if shown.Schema[i] != want[i] {
					t.Errorf("show's schema change %d is %+v, status's %+v", i, shown.Schema[i], want[i])
				}
			}

			r = idemsync(t, dir, nil, "show", job, "--limit", "1")
			_, text, _ := strings.Cut(r.stdout, "schema changes (4), newest first:")
			if r.code != 0 || !strings.Contains(text, "orders.price integer → numeric") || !strings.Contains(text, "orders.id (new) → integer: new field") {
				t.Errorf("show: exit %d, want the 4 schema changes after the rows:\n%s%s", r.code, r.stdout, r.stderr)
			}
		})
	}
}
