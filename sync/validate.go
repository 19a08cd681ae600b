package sync

import (
	"errors"
	"fmt"
	"strings"

	"github.com/idemsync/idemsync/contract"
)

// checkRow runs v (nil: nothing to check) on a mapped row and returns the
// *BadRecord it reports with the record's index and key filled in.
func checkRow(v contract.RowValidator, t *contract.Table, r contract.Row, index int) error {
	if v == nil {
		return nil
	}
	err := v.CheckRow(t, r)
	if err == nil && len(t.Children) > 0 {
		err = checkChildren(v, t, r) // children.go
	}
	if err == nil {
		return nil
	}
	var bad *contract.BadRecord
	if !errors.As(err, &bad) {
		bad = &contract.BadRecord{Reason: err.Error()}
	}
	bad.Index, bad.Key = index, describeKey(t, r)
	return bad
}

// maxKeyShown is how much of a key value an error shows.
const maxKeyShown = 40

// describeKey returns the record's key for people: "id=42" or
// "a=1, b=x", each value cut to maxKeyShown bytes.
func describeKey(t *contract.Table, r contract.Row) string {
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
