package sync

import (
	"context"
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/idemsync/idemsync/contract"
)

// largeRewriteBytes is the size of a PostgreSQL table (with its indexes
// and TOAST) above which validate --connect warns that a pending widening
// rewrites it (docs/job-file.md, "The schema contract"); a variable only
// for the test that lowers it.
var largeRewriteBytes int64 = 256 << 20

// SchemaPlan is validate --connect's report of the changes the job's next
// run would make to its table's columns: each pending change with why,
// and a warning for each widening that rewrites a large table.
type SchemaPlan struct {
	Pending  []contract.SchemaChange `json:"pending_schema_changes"`
	Warnings []string                `json:"warnings,omitempty"`
}

// planSchema compares the table of sink with the columns the job's next
// run would write: the declared ones, or the inferred ones saved so far
// (saved) as the first page's records (recs) would add and widen them
// under target.schema. A sink that cannot read its columns back plans
// nothing.
func planSchema(ctx context.Context, job *Job, sink contract.Sink, saved []contract.Column, recs []gjson.Result) (SchemaPlan, error) {
	plan := SchemaPlan{Pending: []contract.SchemaChange{}}
	planner, ok := sink.(contract.SchemaPlanner)
	if !ok {
		return plan, nil
	}
	t := job.Table
	if job.Infer {
		t.Columns = append([]contract.Column(nil), saved...)
		m := Mapper{Table: &t, Infer: true}
		sc := job.Target.Schema
		m.NoNewColumns, m.NoWiden = !sc.Evolves() && len(saved) > 0, !sc.Widens()
		m.InferPage(recs)
	}
	changes, size, err := planner.PlanSchema(ctx, &t)
	if err != nil {
		return plan, err
	}
	for _, c := range changes {
		col := t.Column(c.Column)
		switch {
		case c.From == "":
			c.Reason = "the table lacks the column: the next run adds it"
		case col != nil && col.Was != "":
			c.Reason = "the first page's values need it wider: the next run widens it in that page's transaction"
			if size > largeRewriteBytes {
				plan.Warnings = append(plan.Warnings, fmt.Sprintf("widening column %s of table %s from %s to %s rewrites the whole table (%d MiB) "+
					"under an ACCESS EXCLUSIVE lock held until the page commits: readers and writers of the table wait (target.timeout.statement bounds it)",
					c.Column, t.String(), c.From, c.To, size>>20))
			}
		default:
			c.Reason = fmt.Sprintf("the table's type differs from the job's (%s): idemsync does not change it", c.To)
		}
		plan.Pending = append(plan.Pending, c)
	}
	return plan, nil
}
