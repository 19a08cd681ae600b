package sync

import (
	"context"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/internal/pgtest"
	"github.com/idemsync/idemsync/sink"
)

// A widening pending on a PostgreSQL table larger than largeRewriteBytes
// is reported with a warning that it rewrites the table; below it, the
// change alone. The table is real, made by the sink itself.
func TestPlanSchemaWarnsOfLargeRewrite(t *testing.T) {
	ctx := context.Background()
	_, schema := pgtest.Schema(t, "plan_")
	url := pgtest.URL(t)

	saved := []contract.Column{{Name: "id", Path: "id", Type: contract.TypeInteger}, {Name: "price", Path: "price", Type: contract.TypeInteger}}
	job := &Job{Infer: true, Table: contract.Table{Schema: schema, Name: "orders", Key: []string{"id"}, Create: true}}
	s, err := sink.Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	made := job.Table
	made.Columns = saved
	if err := s.Prepare(ctx, &made); err != nil {
		t.Fatal(err)
	}
	recs := gjson.Parse(`[{"id":1,"price":79.19}]`).Array()

	plan, err := planSchema(ctx, job, s, saved, recs)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Pending) != 1 || plan.Pending[0].Column != "price" || plan.Pending[0].From != "bigint" || plan.Pending[0].To != "numeric" || len(plan.Warnings) != 0 {
		t.Fatalf("plan %+v, want price bigint → numeric and no warning for a small table", plan)
	}
	defer func(was int64) { largeRewriteBytes = was }(largeRewriteBytes)
	largeRewriteBytes = 0
	plan, err = planSchema(ctx, job, s, saved, recs)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Warnings) != 1 || !strings.Contains(plan.Warnings[0], "widening column price of table "+schema+".orders from bigint to numeric rewrites the whole table") {
		t.Errorf("warnings %q, want the rewrite of %s.orders", plan.Warnings, schema)
	}
}
