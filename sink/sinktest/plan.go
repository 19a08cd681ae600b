package sinktest

import (
	"context"
	"testing"

	"github.com/idemsync/idemsync/contract"
)

// planSchema: PlanSchema (validate --connect's pending schema changes,
// docs/job-file.md "The schema contract") reads the table back without
// changing it: none for a missing table or one that matches; a column
// the table lacks, and one the engine widened whose stored type is not
// yet the new one's, each reported once; after the upsert that widens,
// none.
func planSchema(t *testing.T, b *DB) {
	s := b.Sink(t)
	planner, ok := s.(contract.SchemaPlanner)
	if !ok {
		t.Fatal("the sink cannot read its columns back (contract.SchemaPlanner)")
	}
	ctx := context.Background()
	narrow := b.Table("planned", []string{"id"}, Col("id", contract.TypeText), Col("n", contract.TypeInteger))
	if got, _, err := planner.PlanSchema(ctx, narrow); err != nil || len(got) != 0 {
		t.Fatalf("a missing table: %+v, %v; want no change", got, err)
	}
	MustPrepare(t, s, narrow)
	MustUpsert(t, s, narrow, contract.Counts{Inserted: 1}, Row("a", int64(5)))
	if got, _, err := planner.PlanSchema(ctx, narrow); err != nil || len(got) != 0 {
		t.Fatalf("a matching table: %+v, %v; want no change", got, err)
	}
	wide := b.Table("planned", []string{"id"}, Col("id", contract.TypeText),
		contract.Column{Name: "n", Path: "n", Type: contract.TypeText, Was: contract.TypeInteger}, Col("note", contract.TypeText))
	got, _, err := planner.PlanSchema(ctx, wide)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]contract.SchemaChange{}
	for _, c := range got {
		byName[c.Column] = c
	}
	if n, note := byName["n"], byName["note"]; len(got) != 2 || n.From == "" || n.To != "text" || note.From != "" || note.To != "text" {
		t.Fatalf("PlanSchema = %+v, want n widened from its stored type to text and note added", got)
	}
	// Planning changed nothing: the stored value is still the integer's.
	AssertRows(t, b.Read(t, narrow), Want(t, narrow, Row("a", int64(5))))
	MustPrepare(t, s, wide)
	MustUpsert(t, s, wide, contract.Counts{Inserted: 1}, Row("b", "x", "y"))
	if got, _, err := planner.PlanSchema(ctx, wide); err != nil || len(got) != 0 {
		t.Errorf("after the widening write: %+v, %v; want no change", got, err)
	}
}
