package contract

import "time"

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
