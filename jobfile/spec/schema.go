package spec

// The values of target.schema (docs/job-file.md, "The schema contract").
const (
	NewColumnsEvolve  = "evolve"  // a new field becomes a column (the default)
	NewColumnsFreeze  = "freeze"  // a new field fails its page
	NewColumnsDiscard = "discard" // a new field's value is dropped, the record kept, a dead letter says so

	TypeChangeWiden        = "widen"         // the column widens along the lattice (the default)
	TypeChangeFreeze       = "freeze"        // a value the column cannot take fails its page
	TypeChangeDiscardValue = "discard_value" // that value is stored as NULL, the record kept, a dead letter says so
	TypeChangeDiscardRow   = "discard_row"   // the record goes to the dead letters
)

// SchemaContract is target.schema: what a page may change of a table whose
// columns are inferred (a job without target.columns). The loader fills
// both keys; the zero value is today's behaviour (evolve, widen).
type SchemaContract struct {
	NewColumns string `yaml:"new_columns,omitempty" json:"new_columns,omitempty"`
	TypeChange string `yaml:"type_change,omitempty" json:"type_change,omitempty"`
	// The job file's lines of the two keys (0: not written), for the
	// message of a page the contract fails.
	NewColumnsLine int `yaml:"-" json:"-"`
	TypeChangeLine int `yaml:"-" json:"-"`
}

// Evolves reports whether a new field becomes a column.
func (s *SchemaContract) Evolves() bool {
	return s == nil || s.NewColumns == "" || s.NewColumns == NewColumnsEvolve
}

// Widens reports whether a value a column cannot take widens it.
func (s *SchemaContract) Widens() bool {
	return s == nil || s.TypeChange == "" || s.TypeChange == TypeChangeWiden
}
