package sync

import (
	"encoding/json"
	"fmt"

	"github.com/idemsync/idemsync/contract"
)

// storedColumn is an inferred contract.Column as the state store keeps it
// (contract.JobState.Columns, contract.PageCommit.Columns): the engine owns
// the encoding, so every store keeps the same JSON, and the tags keep it
// stable if contract.Column changes.
type storedColumn struct {
	Name string              `json:"name"`
	Path string              `json:"path"`
	Type contract.ColumnType `json:"type"`
	Was  contract.ColumnType `json:"was,omitempty"` // the type before a widening
}

// EncodeColumns encodes inferred columns for the store; nil (no change)
// encodes as "", which the store reads as "keep the saved columns".
func EncodeColumns(cols []contract.Column) string {
	if cols == nil {
		return ""
	}
	out := make([]storedColumn, len(cols))
	for i, c := range cols {
		out[i] = storedColumn{Name: c.Name, Path: c.Path, Type: c.Type, Was: c.Was} // inferred columns: never a parent's
	}
	b, _ := json.Marshal(out) // strings only: cannot fail
	return string(b)
}

// DecodeColumns decodes the columns EncodeColumns encoded; "" is none.
func DecodeColumns(v string) ([]contract.Column, error) {
	if v == "" {
		return nil, nil
	}
	var in []storedColumn
	if err := json.Unmarshal([]byte(v), &in); err != nil {
		return nil, fmt.Errorf("decode columns: %w", err)
	}
	out := make([]contract.Column, len(in))
	for i, c := range in {
		out[i] = contract.Column{Name: c.Name, Path: c.Path, Type: c.Type, Was: c.Was}
	}
	return out, nil
}
