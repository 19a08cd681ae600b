package sqlkit

import (
	"strings"

	"github.com/idemsync/idemsync/contract"
)

// ReadColumns drops the content hash column from a table's column names
// and returns the names kept with the SQL list that selects each one as
// text (cast, e.g. `CAST(%s AS TEXT)` or `%s::text`).
func ReadColumns(all []string, cast string) ([]string, string) {
	var keep, sel []string
	for _, c := range all {
		if c == contract.ColHash {
			continue
		}
		keep = append(keep, c)
		sel = append(sel, strings.Replace(cast, "%s", QuoteIdent(c), 1))
	}
	return keep, strings.Join(sel, ", ")
}

// MissingTable is the error for a table that does not exist yet.
func MissingTable(t *contract.Table) error {
	return &contract.Error{Class: contract.Permanent, Msg: "table " + t.String() + " does not exist",
		Hint: "run the job first: it creates the table"}
}

// ScanText scans a row of nullable text columns.
func ScanText(n int, scan func(dest ...any) error) ([]*string, error) {
	vals := make([]*string, n)
	dest := make([]any, n)
	for i := range vals {
		dest[i] = &vals[i]
	}
	if err := scan(dest...); err != nil {
		return nil, err
	}
	return vals, nil
}

// KeyDesc names a row of t by its key values (text, nil for NULL):
// "id=42", "order_id=1 n=2".
func KeyDesc(t *contract.Table, vals []*string) string {
	parts := make([]string, len(t.Key))
	for i, k := range t.Key {
		v := "NULL"
		if i < len(vals) && vals[i] != nil {
			v = *vals[i]
		}
		parts[i] = k + "=" + v
	}
	return strings.Join(parts, " ")
}
