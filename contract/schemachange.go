package contract

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// SchemaChange is one change a page made to its table's columns: a column
// added (From "") or widened, with why (docs/job-file.md, "The schema
// contract"). The state store records it with the page's checkpoint.
type SchemaChange struct {
	ID     int64     `json:"id,omitempty"`
	Job    string    `json:"job"`
	RunID  int64     `json:"run_id"`
	Table  string    `json:"table"`
	Column string    `json:"column"`
	From   string    `json:"from,omitempty"` // "" for a new column
	To     string    `json:"to"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// SchemaPlanner is a Sink that can tell, without changing anything, how
// its table differs from a table's columns (validate --connect's pending
// schema changes, docs/job-file.md "The schema contract").
type SchemaPlanner interface {
	// PlanSchema returns a SchemaChange for each column of t the table
	// lacks (From "") and each whose stored type is not the one t's type
	// is stored as (From the database's type name, To t's type), and the
	// table's size in bytes when a type change rewrites the whole table
	// (PostgreSQL; 0 where it does not). A missing table gives none.
	PlanSchema(ctx context.Context, t *Table) (changes []SchemaChange, rewriteBytes int64, err error)
}

// SchemaDiscards counts what target.schema discarded (docs/job-file.md,
// "The schema contract"): records written without a new field
// (NewFields) or with a value stored as NULL (Values), and records
// dead-lettered whole (Rows). A page's are added to its run's in the
// page's state transaction, so a continued run reports its whole pass's.
type SchemaDiscards struct {
	NewFields int64 `json:"new_fields"`
	Values    int64 `json:"values"`
	Rows      int64 `json:"rows"`
}

// Add adds o to d.
func (d *SchemaDiscards) Add(o SchemaDiscards) {
	d.NewFields += o.NewFields
	d.Values += o.Values
	d.Rows += o.Rows
}

// DecodeSchemaDiscards reads the counts a store keeps as a JSON object
// ({"new_fields": 1, "values": 0, "rows": 2}); "" is none.
func DecodeSchemaDiscards(s string) (SchemaDiscards, error) {
	var d SchemaDiscards
	if s == "" {
		return d, nil
	}
	if err := json.Unmarshal([]byte(s), &d); err != nil {
		return d, fmt.Errorf("schema discards %q: %w", s, err)
	}
	return d, nil
}
