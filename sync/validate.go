package sync

import (
	"errors"
	"fmt"
	"strings"
)

// RowValidator is implemented by a Sink whose database refuses values the
// engine otherwise accepts (PostgreSQL: a NUL character in text, a key
// larger than its index can hold). The engine checks every mapped record
// with it before the page is written, so such a record is a bad record
// like any other (dead-lettered under on_bad_record: skip, failing the
// page with its key, column and reason otherwise) instead of a database
// error that fails the page on every run.
type RowValidator interface {
	// CheckRow returns nil when the target can store every value of r, or
	// a *BadRecord naming the column and the reason (Index and Key are
	// filled in by the caller). r may hold fewer values than t has
	// columns (columns inferred later); the missing ones are NULL.
	CheckRow(t *Table, r Row) error
}

// checkRow runs v (nil: nothing to check) on a mapped row and returns the
// *BadRecord it reports with the record's index and key filled in.
func checkRow(v RowValidator, t *Table, r Row, index int) error {
	if v == nil {
		return nil
	}
	err := v.CheckRow(t, r)
	if err == nil {
		return nil
	}
	var bad *BadRecord
	if !errors.As(err, &bad) {
		bad = &BadRecord{Reason: err.Error()}
	}
	bad.Index, bad.Key = index, describeKey(t, r)
	return bad
}

// maxKeyShown is how much of a key value an error shows.
const maxKeyShown = 40

// describeKey returns the record's key for people: "id=42" or
// "a=1, b=x", each value cut to maxKeyShown bytes.
func describeKey(t *Table, r Row) string {
	var parts []string
	for _, k := range t.Key {
		for i, c := range t.Columns {
			if c.Name != k || i >= len(r.Values) {
				continue
			}
			s := fmt.Sprint(r.Values[i])
			if len(s) > maxKeyShown {
				s = fmt.Sprintf("%s… (%d bytes)", strings.ToValidUTF8(s[:maxKeyShown], ""), len(s))
			}
			parts = append(parts, k+"="+s)
		}
	}
	return strings.Join(parts, ", ")
}
