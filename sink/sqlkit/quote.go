package sqlkit

import (
	"strings"
	"unicode/utf8"

	"github.com/idemsync/idemsync/contract"
)

// QuoteIdent returns s as a double-quoted SQL identifier with every embedded
// double quote doubled, so that any name (spaces, quotes, unicode, keywords)
// is taken literally by both SQLite and PostgreSQL. It never fails; names
// neither database accepts (empty, containing NUL) are rejected earlier by
// Prepare.
func QuoteIdent(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// QuoteTable returns the quoted, optionally schema-qualified name of t.
func QuoteTable(t *contract.Table) string {
	if t.Schema != "" {
		return QuoteIdent(t.Schema) + "." + QuoteIdent(t.Name)
	}
	return QuoteIdent(t.Name)
}

// QuoteList quotes each name and joins them with ", ".
func QuoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = QuoteIdent(n)
	}
	return strings.Join(q, ", ")
}

// checkIdent rejects identifiers neither backend can store: empty, NUL bytes,
// invalid UTF-8, and names longer than maxLen bytes when maxLen > 0.
func checkIdent(kind, s string, maxLen int) error {
	switch {
	case s == "":
		return contract.Errorf(contract.Invalid, "empty %s name", kind)
	case strings.IndexByte(s, 0) >= 0:
		return contract.Errorf(contract.Invalid, "%s name %q contains a NUL byte", kind, s)
	case !utf8.ValidString(s):
		return contract.Errorf(contract.Invalid, "%s name %q is not valid UTF-8", kind, s)
	case maxLen > 0 && len(s) > maxLen:
		return contract.Errorf(contract.Invalid, "%s name %q is longer than %d bytes", kind, s, maxLen)
	}
	return nil
}

// CheckTable validates the names of t before any SQL is built from them:
// every identifier must pass checkIdent, every key and the version column
// must be mapped columns, no column may be mapped twice or use the reserved
// bookkeeping names, and every column type must be valid. Errors are
// *contract.Error with Invalid.
func CheckTable(t *contract.Table, maxLen int) error {
	if t.Schema != "" {
		if err := checkIdent("schema", t.Schema, maxLen); err != nil {
			return err
		}
	}
	if err := checkIdent("table", t.Name, maxLen); err != nil {
		return err
	}
	if len(t.Key) == 0 {
		return contract.Errorf(contract.Invalid, "table %s: no key columns", t)
	}
	seen := make(map[string]bool, len(t.Columns))
	for _, c := range t.Columns {
		if err := checkIdent("column", c.Name, maxLen); err != nil {
			return err
		}
		if seen[c.Name] {
			return contract.Errorf(contract.Invalid, "table %s: column %q mapped twice", t, c.Name)
		}
		seen[c.Name] = true
		if c.Name == contract.ColHash || c.Name == contract.ColSyncedAt {
			return contract.Errorf(contract.Invalid, "table %s: column name %q is reserved for bookkeeping", t, c.Name)
		}
		if !c.Type.Valid() {
			return contract.Errorf(contract.Invalid, "table %s: column %q has unknown type %q", t, c.Name, c.Type)
		}
	}
	for _, k := range t.Key {
		if !seen[k] {
			return contract.Errorf(contract.Invalid, "table %s: key column %q is not a mapped column", t, k)
		}
	}
	if t.Version != "" && !seen[t.Version] {
		return contract.Errorf(contract.Invalid, "table %s: version column %q is not a mapped column", t, t.Version)
	}
	return nil
}

// SameSet reports whether a and b hold the same names, ignoring order.
// fold, when set, compares ASCII case-insensitively (SQLite's rule).
func SameSet(a, b []string, fold bool) bool {
	if len(a) != len(b) {
		return false
	}
	norm := func(s string) string {
		if fold {
			return ASCIILower(s)
		}
		return s
	}
	count := make(map[string]int, len(a))
	for _, s := range a {
		count[norm(s)]++
	}
	for _, s := range b {
		count[norm(s)]--
		if count[norm(s)] < 0 {
			return false
		}
	}
	return true
}

// ASCIILower lower-cases ASCII letters only, as SQLite does when it compares
// identifiers.
func ASCIILower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// CheckTableName checks only the schema and table names of t (what a
// read of the table's state needs; its columns may not be known yet).
func CheckTableName(t *contract.Table, maxLen int) error {
	if t.Schema != "" {
		if err := checkIdent("schema", t.Schema, maxLen); err != nil {
			return err
		}
	}
	return checkIdent("table", t.Name, maxLen)
}

// IsKey reports whether name is one of t's key columns.
func IsKey(t *contract.Table, name string) bool {
	for _, k := range t.Key {
		if k == name {
			return true
		}
	}
	return false
}
