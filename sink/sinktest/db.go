// Package sinktest is the conformance suite every database of idemsync
// passes: one set of cases (Run) run unchanged against SQLite, PostgreSQL
// and any database added later. A database's tests describe it in a DB (how
// to open a sink, run raw SQL, and where it differs) and call Run.
package sinktest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

// DB is one database under test, with a fresh namespace for each test
// (an SQLite file in t.TempDir(), a PostgreSQL schema dropped on cleanup).
// Open, Exec and Rows are required; the other fields describe how the
// database differs and default to an SQLite-like one.
type DB struct {
	// Name names the database in messages ("sqlite", "postgres").
	Name string
	// Schema is the namespace the test's tables are created in; "" for
	// the database's default.
	Schema string
	// Open returns a new sink on the database.
	Open func(ctx context.Context) (contract.Sink, error)
	// Exec runs a statement on the database, outside any sink, failing t
	// on error.
	Exec func(t *testing.T, query string)
	// Rows runs a query on the database and returns its rows with the
	// driver's Go values, failing t on error.
	Rows func(t *testing.T, query string) [][]any
	// AsText wraps a column expression so that numeric and JSON values read
	// back as text (PostgreSQL: expr::text). Nil leaves the expression as
	// it is: the database stores them as text.
	AsText func(expr string) string
	// Schemas is true when the database has schemas made by CREATE SCHEMA.
	// When false, the suite checks that schema "main" is the database and
	// any other schema is refused (SQLite).
	Schemas bool
	// UniqueFix is what the hint for a table without a unique key on the
	// key columns must contain: the statement that adds one ("CREATE
	// UNIQUE INDEX", "ADD UNIQUE").
	UniqueFix string
	// DropOdd installs on tbl (key: an integer id) what makes the database
	// keep a new row with an odd id out of the table although the insert
	// succeeds (a BEFORE INSERT trigger returning NULL, RAISE(IGNORE)).
	DropOdd func(t *testing.T, tbl *contract.Table)
	// Skip maps a case name to the reason the database skips it.
	Skip map[string]string
}

// RandomHex returns n random bytes in hex: a name no other test uses.
func RandomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Sink returns a new sink on the database, closed on cleanup.
func (b *DB) Sink(t *testing.T) contract.Sink {
	t.Helper()
	s, err := b.Open(context.Background())
	if err != nil {
		t.Fatalf("open %s: %v", b.Name, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Table returns a table named name in the test's namespace, created by
// Prepare when missing.
func (b *DB) Table(name string, key []string, cols ...contract.Column) *contract.Table {
	return &contract.Table{Schema: b.Schema, Name: name, Key: key, Columns: cols, Create: true}
}

// QName returns the quoted, qualified name of tbl for raw SQL.
func QName(tbl *contract.Table) string {
	if tbl.Schema != "" {
		return sqlkit.QuoteIdent(tbl.Schema) + "." + sqlkit.QuoteIdent(tbl.Name)
	}
	return sqlkit.QuoteIdent(tbl.Name)
}

// Read returns every row of tbl ordered by key, each column (mapped and
// bookkeeping) rendered as one canonical string per type, so that every
// database compares equal.
func (b *DB) Read(t *testing.T, tbl *contract.Table) []map[string]string {
	t.Helper()
	cols := append([]contract.Column{}, tbl.Columns...)
	cols = append(cols,
		contract.Column{Name: contract.ColHash, Type: contract.TypeText},
		contract.Column{Name: contract.ColSyncedAt, Type: contract.TypeTimestamp})
	var sel, order []string
	for _, c := range cols {
		e := sqlkit.QuoteIdent(c.Name)
		if c.Type == contract.TypeNumeric || c.Type == contract.TypeJSON {
			e = b.asText(e)
		}
		sel = append(sel, e)
	}
	for _, k := range tbl.Key {
		order = append(order, sqlkit.QuoteIdent(k))
	}
	q := fmt.Sprintf("SELECT %s FROM %s ORDER BY %s", strings.Join(sel, ", "), QName(tbl), strings.Join(order, ", "))
	var out []map[string]string
	for _, r := range b.Rows(t, q) {
		m := map[string]string{}
		for i, c := range cols {
			m[c.Name] = canon(t, c.Type, r[i])
		}
		out = append(out, m)
	}
	return out
}

// canon renders a value, Go (from the engine) or stored (from either
// database), as one canonical string per type.
func canon(t *testing.T, typ contract.ColumnType, v any) string {
	t.Helper()
	if v == nil {
		return "NULL"
	}
	switch typ {
	case contract.TypeInteger:
		switch x := v.(type) {
		case int64:
			return strconv.FormatInt(x, 10)
		case int32:
			return strconv.FormatInt(int64(x), 10)
		case int:
			return strconv.Itoa(x)
		}
	case contract.TypeReal:
		if f, ok := v.(float64); ok {
			return strconv.FormatFloat(f, 'g', -1, 64)
		}
	case contract.TypeBoolean:
		switch x := v.(type) {
		case bool:
			return strconv.FormatBool(x)
		case int64:
			return strconv.FormatBool(x != 0)
		}
	case contract.TypeTimestamp:
		switch x := v.(type) {
		case time.Time:
			return x.UTC().Format(time.RFC3339Nano)
		case string:
			tm, err := time.Parse(time.RFC3339Nano, x)
			if err != nil {
				t.Fatalf("stored timestamp %q: %v", x, err)
			}
			return tm.UTC().Format(time.RFC3339Nano)
		}
	case contract.TypeJSON:
		if s, ok := v.(string); ok {
			var x any
			if err := json.Unmarshal([]byte(s), &x); err != nil {
				t.Fatalf("stored json %q: %v", s, err)
			}
			out, _ := json.Marshal(x)
			return string(out)
		}
	default: // text, numeric
		if s, ok := v.(string); ok {
			return s
		}
	}
	t.Fatalf("canon: unexpected %T %v for %s", v, v, typ)
	return ""
}

// Row builds an engine row with a content hash of its values.
func Row(vals ...any) contract.Row {
	h := sha256.New()
	for _, v := range vals {
		fmt.Fprintf(h, "%T:%v\x00", v, v)
	}
	return contract.Row{Values: vals, Hash: hex.EncodeToString(h.Sum(nil))}
}

// Want renders rows the way Read does, for comparison with AssertRows.
func Want(t *testing.T, tbl *contract.Table, rows ...contract.Row) []map[string]string {
	t.Helper()
	var out []map[string]string
	for _, r := range rows {
		m := map[string]string{}
		for i, c := range tbl.Columns {
			m[c.Name] = canon(t, c.Type, r.Values[i])
		}
		m[contract.ColHash] = r.Hash
		out = append(out, m)
	}
	return out
}

// AssertRows compares rows from Read to rows from Want, ignoring
// synced-at, and fails t on the first difference in count.
func AssertRows(t *testing.T, got, want []map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d rows, want %d:\ngot  %v\nwant %v", len(got), len(want), got, want)
	}
	for i := range want {
		for k, w := range want[i] {
			if got[i][k] != w {
				t.Errorf("row %d column %q = %q, want %q", i, k, got[i][k], w)
			}
		}
	}
}

// MustPrepare prepares tbl on s, failing t on error.
func MustPrepare(t *testing.T, s contract.Sink, tbl *contract.Table) {
	t.Helper()
	if err := s.Prepare(context.Background(), tbl); err != nil {
		t.Fatalf("prepare %s: %v (hint: %s)", tbl, err, contract.Hint(err))
	}
}

// MustUpsert writes rows to tbl on s as one page and fails t on error or
// when the counts differ from want.
func MustUpsert(t *testing.T, s contract.Sink, tbl *contract.Table, want contract.Counts, rows ...contract.Row) {
	t.Helper()
	got, err := s.Upsert(context.Background(), tbl, rows)
	if err != nil {
		t.Fatalf("upsert into %s: %v", tbl, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("upsert counts = %+v, want %+v", got, want)
	}
}

// syncedAt returns each row's synced-at value, in key order.
func syncedAt(t *testing.T, b *DB, tbl *contract.Table) []string {
	t.Helper()
	var out []string
	for _, r := range b.Read(t, tbl) {
		out = append(out, r[contract.ColSyncedAt])
	}
	return out
}

// asText wraps expr with AsText when set.
func (b *DB) asText(expr string) string {
	if b.AsText == nil {
		return expr
	}
	return b.AsText(expr)
}

// Col returns a column whose JSON path is its name.
func Col(name string, typ contract.ColumnType) contract.Column {
	return contract.Column{Name: name, Path: name, Type: typ}
}

// People is the small table most cases use: id text key, name text, age
// integer.
func People(b *DB) *contract.Table {
	return b.Table("people", []string{"id"},
		Col("id", contract.TypeText), Col("name", contract.TypeText), Col("age", contract.TypeInteger))
}
