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
