package e2e

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/idemsync/idemsync/internal/fakeapi"
)

// Under serve, one process runs a job many times; each run reads the
// job's progress marker as it starts, so a progress table dropped by hand
// between two runs is adopted by the next run, which makes it again
// (docs/guarantees.md, "Progress markers"): every run completes and
// writes its changed rows.
func TestServeProgressTableDropped(t *testing.T) {
	pg := postgresURL(t)
	api, url := startAPI(t, fakeapi.Options{Records: 100, Seed: 3})
	schema := freshSchema(t, pg)
	dir := t.TempDir()
	writeJob(t, dir, "orders.yaml", pgJob("hwm", url, pg, schema))
	s := startServe(t, dir, dir, nil)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	progress := pgx.Identifier{schema, "_idemsync_progress"}.Sanitize()
	for i := range 4 {
		if i > 0 {
			if _, err := conn.Exec(ctx, "DROP TABLE "+progress); err != nil {
				t.Fatal(err)
			}
			api.Update(4+i, func(r *fakeapi.Record) { r.Name = "changed" })
		}
		code, body := s.do(t, "POST", "/jobs/orders/run", "")
		var r runJSON
		if err := json.Unmarshal([]byte(body), &r); code != 200 || err != nil || r.Status != "completed" || i > 0 && r.Updated != 1 {
			t.Fatalf("run %d: %d %v %s", i, code, err, body)
		}
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+progress).Scan(&n); err != nil || n != 1 {
			t.Fatalf("after run %d the progress table holds %d rows (%v)", i, n, err)
		}
	}
	assertEqualSource(t, readPostgres(t, pg, pgx.Identifier{schema, "orders"}), sourceRows(api))
}
