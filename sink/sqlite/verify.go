package sqlite

import (
	"fmt"
	"strings"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

// sqliteVerifyColumns returns the names of the mapped columns that are not
// key columns: what a verify upsert compares besides the hash.
func sqliteVerifyColumns(t *contract.Table) []string {
	var out []string
	for _, c := range t.Columns {
		if !sqlkit.IsKey(t, c.Name) {
			out = append(out, c.Name)
		}
	}
	return out
}

// sqliteVerifyTerms returns, with t.Verify set, the terms the upsert's
// WHERE adds to the hash comparison: " OR target.c IS NOT next.c" for each
// column of sqliteVerifyColumns, so that a row edited outside idemsync
// (its hash unchanged) is rewritten. Both sides are in the column's stored
// form (excluded holds the value after the column's affinity); text
// compares byte by byte whatever the column's collation (NOCASE would
// take 'BOB' for 'Bob'). It returns "" without t.Verify.
func sqliteVerifyTerms(t *contract.Table, target, next string) string {
	if !t.Verify {
		return ""
	}
	var b strings.Builder
	for _, c := range sqliteVerifyColumns(t) {
		q := sqlkit.QuoteIdent(c)
		fmt.Fprintf(&b, " OR %s.%s IS NOT %s.%[2]s COLLATE BINARY", target, q, next)
	}
	return b.String()
}
