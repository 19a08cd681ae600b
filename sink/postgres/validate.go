package postgres

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/internal/jsontext"
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
// JSON holding the escape \u0000 or of a lone surrogate (jsonb refuses
// them) or invalid UTF-8, a timestamp with digits below the microsecond
// (timestamptz would drop them), and a key larger than pgMaxKeyBytes. It
// returns nil when the row fits.
func (p *Sink) CheckRow(t *contract.Table, r contract.Row) error {
	rc := p.rowChecks(t)
	keyBytes := 0
	for j, v := range r.Values {
		if j >= len(rc.cols) {
			break
		}
		if s, ok := v.(string); ok {
			if why := textProblem(rc.cols[j].problem, s); why != "" {
				return &contract.BadRecord{Column: t.Columns[j].Name, Reason: why}
			}
		}
		if tm, ok := v.(time.Time); ok && tm.Nanosecond()%1000 != 0 {
			return &contract.BadRecord{Column: t.Columns[j].Name, Reason: fmt.Sprintf(
				"timestamp %s has digits below the microsecond, which PostgreSQL's timestamptz cannot store (declare the column text to keep them)",
				tm.Format(time.RFC3339Nano))}
		}
		if rc.cols[j].key {
			keyBytes += valueBytes(v)
		}
	}
	if keyBytes > pgMaxKeyBytes {
		return &contract.BadRecord{Column: strings.Join(t.Key, ", "),
			Reason: fmt.Sprintf("key is %d bytes; PostgreSQL's unique index holds at most about %d bytes per key", keyBytes, pgMaxKeyBytes)}
	}
	return nil
}

// rowChecks is what CheckRow asks of each column of a table, looked up
// once for its columns rather than once a value (the lookup of each
// value's type by name was about 1% of a first load: docs/performance.md,
// "Round four").
type rowChecks struct {
	t    *contract.Table
	cols []columnCheck
}

type columnCheck struct {
	name    string
	typ     contract.ColumnType
	problem func(string) string // the type's own check of text (typeOf(typ).problem)
	key     bool
}

// rowChecks returns the checks of t's columns, kept while its columns
// stay the same (a page's rows share them; inferred columns may be added
// or widened between pages). Pages are mapped, and their rows checked,
// on several goroutines at once.
func (p *Sink) rowChecks(t *contract.Table) *rowChecks {
	if rc := p.checks.Load(); rc != nil && rc.fits(t) {
		return rc
	}
	rc := &rowChecks{t: t, cols: make([]columnCheck, len(t.Columns))}
	for j, c := range t.Columns {
		rc.cols[j] = columnCheck{name: c.Name, typ: c.Type, problem: typeOf(c.Type).problem, key: sqlkit.IsKey(t, c.Name)}
	}
	p.checks.Store(rc)
	return rc
}

// fits reports whether rc was made for t's current columns.
func (rc *rowChecks) fits(t *contract.Table) bool {
	if rc.t != t || len(rc.cols) != len(t.Columns) {
		return false
	}
	for j := range rc.cols {
		if c := &t.Columns[j]; rc.cols[j].name != c.Name || rc.cols[j].typ != c.Type {
			return false
		}
	}
	return true
}

// textProblem says why PostgreSQL cannot store s in a column whose type's
// own check is problem (nil: text), or "".
func textProblem(problem func(string) string, s string) string {
	if !utf8.ValidString(s) {
		return "value is not valid UTF-8, which PostgreSQL cannot store"
	}
	if problem != nil {
		return problem(s)
	}
	if strings.IndexByte(s, 0) >= 0 {
		return `value holds a NUL character (\u0000), which PostgreSQL text cannot store`
	}
	return ""
}

// jsonProblem refuses JSON holding the escape \u0000 or the escape of a
// lone UTF-16 surrogate (\ud800), both of which jsonb refuses.
func jsonProblem(s string) string {
	if hasNULEscape(s) {
		return `JSON holds the escape \u0000, which PostgreSQL's jsonb cannot store`
	}
	if err := jsontext.Surrogates(s); err != nil {
		return fmt.Sprintf("JSON holds %v, which PostgreSQL's jsonb cannot store", err)
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
