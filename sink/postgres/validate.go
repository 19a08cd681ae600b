package postgres

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

// pgMaxKeyBytes bounds a record's key. A btree index entry holds at most
// about 2700 bytes (a third of an 8 KiB page); a larger key fails the whole
// page with "index row size exceeds maximum". 2600 leaves room for the
// entry's overhead whatever the key's types.
const pgMaxKeyBytes = 2600

var _ contract.RowValidator = (*Sink)(nil)

// CheckRow reports the first value of r PostgreSQL cannot store (see
// contract.RowValidator): text holding a NUL character or invalid UTF-8,
// JSON holding the escape \u0000 (jsonb refuses it) or invalid UTF-8, and
// a key larger than pgMaxKeyBytes. It returns nil when the row fits.
func (p *Sink) CheckRow(t *contract.Table, r contract.Row) error {
	keyBytes := 0
	for j, c := range t.Columns {
		if j >= len(r.Values) {
			break
		}
		v := r.Values[j]
		if s, ok := v.(string); ok {
			if why := pgTextProblem(c.Type, s); why != "" {
				return &contract.BadRecord{Column: c.Name, Reason: why}
			}
		}
		if sqlkit.IsKey(t, c.Name) {
			keyBytes += valueBytes(v)
		}
	}
	if keyBytes > pgMaxKeyBytes {
		return &contract.BadRecord{Column: strings.Join(t.Key, ", "),
			Reason: fmt.Sprintf("key is %d bytes; PostgreSQL's unique index holds at most about %d bytes per key", keyBytes, pgMaxKeyBytes)}
	}
	return nil
}

// pgTextProblem says why PostgreSQL cannot store s in a column of type typ,
// or "".
func pgTextProblem(typ contract.ColumnType, s string) string {
	if !utf8.ValidString(s) {
		return "value is not valid UTF-8, which PostgreSQL cannot store"
	}
	if f := typeOf(typ).problem; f != nil {
		return f(s)
	}
	if strings.IndexByte(s, 0) >= 0 {
		return `value holds a NUL character (\u0000), which PostgreSQL text cannot store`
	}
	return ""
}

// jsonProblem refuses JSON holding the escape \u0000.
func jsonProblem(s string) string {
	if hasNULEscape(s) {
		return `JSON holds the escape \u0000, which PostgreSQL's jsonb cannot store`
	}
	return ""
}

// hasNULEscape reports whether JSON text s holds the escape \u0000 (and
// not an escaped backslash followed by u0000).
func hasNULEscape(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			continue
		}
		if s[i+1] == 'u' && strings.HasPrefix(s[i+2:], "0000") {
			return true
		}
		i++ // skip the escaped character
	}
	return false
}

// valueBytes is about how many bytes v takes in an index entry.
func valueBytes(v any) int {
	switch x := v.(type) {
	case string:
		return len(x)
	case []byte:
		return len(x)
	case nil:
		return 0
	case time.Time, int64, float64:
		return 8
	}
	return len(fmt.Sprint(v))
}
