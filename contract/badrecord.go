package contract

import "fmt"

// BadRecord is a record that cannot be written: its key is missing or null,
// or a value cannot be converted to its column's type.
type BadRecord struct {
	Index  int    // position of the record in its page, from 0
	Key    string // the record's key ("id=42"), when known
	Column string // column concerned, "" when the record is not an object
	Reason string
}

func (b *BadRecord) Error() string {
	rec := fmt.Sprintf("record %d", b.Index)
	if b.Key != "" {
		rec += " (key " + b.Key + ")"
	}
	if b.Column == "" {
		return rec + ": " + b.Reason
	}
	return rec + ": column " + b.Column + ": " + b.Reason
}
