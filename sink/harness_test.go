package sink_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/sink"
	idsync "github.com/idemsync/idemsync/sync"
	"github.com/jackc/pgx/v5"
)

// pgEnv names the environment variable holding the test server's URL;
// pgRequireEnv, when set (CI), turns a missing URL into a failure.
const (
	pgEnv        = "IDEMSYNC_TEST_POSTGRES_URL"
	pgRequireEnv = "IDEMSYNC_TEST_REQUIRE_POSTGRES"
)

// postgresURL returns the test server's URL, skipping the test with a
// one-line message when it is unset (failing it instead under CI).
func postgresURL(t testing.TB) string {
	t.Helper()
	url := os.Getenv(pgEnv)
	if url == "" {
		if os.Getenv(pgRequireEnv) != "" {
			t.Fatal(pgEnv + " is not set but " + pgRequireEnv + " is: the PostgreSQL tests must run")
		}
		t.Skip(pgEnv + " is not set; skipping PostgreSQL (source .ci/postgres to start a server)")
	}
	return url
}

// backend is one database under test, with a fresh namespace per test: an
// SQLite file in t.TempDir(), or a PostgreSQL schema dropped on cleanup.
type backend struct {
	name   string
	schema string // PostgreSQL: the test's own schema
	url    string // target URL for sink.Open
	exec   func(t *testing.T, query string)
	rows   func(t *testing.T, query string) [][]any
}

// forEachSink runs fn once per backend: SQLite always, PostgreSQL when
// IDEMSYNC_TEST_POSTGRES_URL is set (skipped with a message otherwise).
func forEachSink(t *testing.T, fn func(t *testing.T, b *backend)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) {
		fn(t, newSQLiteBackend(t))
	})
	t.Run("postgres", func(t *testing.T) {
		fn(t, newPostgresBackend(t))
	})
}

func newSQLiteBackend(t *testing.T) *backend {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sub", "target.db")
	b := &backend{name: "sqlite", url: "sqlite:" + path}
	var db *sql.DB
	conn := func(t *testing.T) *sql.DB {
		t.Helper()
		if db == nil {
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			var err error
			if db, err = sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)"); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
		}
		return db
	}
	b.exec = func(t *testing.T, query string) {
		t.Helper()
		if _, err := conn(t).Exec(query); err != nil {
			t.Fatalf("exec %s: %v", query, err)
		}
	}
	b.rows = func(t *testing.T, query string) [][]any {
		t.Helper()
		rows, err := conn(t).Query(query)
		if err != nil {
			t.Fatalf("query %s: %v", query, err)
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		var out [][]any
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			out = append(out, vals)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	return b
}

func newPostgresBackend(t *testing.T) *backend {
	t.Helper()
	url := postgresURL(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect to %s: %v", pgEnv, err)
	}
	schema := "idemsync_test_" + randomHex(6)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+sink.QuoteIdent(schema)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+sink.QuoteIdent(schema)+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
		conn.Close(ctx)
	})
	b := &backend{name: "postgres", schema: schema, url: url}
	b.exec = func(t *testing.T, query string) {
		t.Helper()
		if _, err := conn.Exec(ctx, query); err != nil {
			t.Fatalf("exec %s: %v", query, err)
		}
	}
	b.rows = func(t *testing.T, query string) [][]any {
		t.Helper()
		rows, err := conn.Query(ctx, query)
		if err != nil {
			t.Fatalf("query %s: %v", query, err)
		}
		out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]any, error) { return r.Values() })
		if err != nil {
			t.Fatalf("query %s: %v", query, err)
		}
		return out
	}
	return b
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// open returns a new sink on the backend's database, closed on cleanup.
func (b *backend) open(t *testing.T) idsync.Sink {
	t.Helper()
	s, err := sink.Open(context.Background(), b.url, nil)
	if err != nil {
		t.Fatalf("open %s: %v", b.name, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// table returns a table named name in the test's namespace.
func (b *backend) table(name string, key []string, cols ...idsync.Column) *idsync.Table {
	return &idsync.Table{Schema: b.schema, Name: name, Key: key, Columns: cols, Create: true}
}

// qname returns the quoted, qualified name of tbl for raw SQL.
func qname(tbl *idsync.Table) string {
	if tbl.Schema != "" {
		return sink.QuoteIdent(tbl.Schema) + "." + sink.QuoteIdent(tbl.Name)
	}
	return sink.QuoteIdent(tbl.Name)
}

// read returns every row of tbl ordered by key, each column (mapped and
// bookkeeping) rendered canonically with canon so both backends compare
// equal.
func (b *backend) read(t *testing.T, tbl *idsync.Table) []map[string]string {
	t.Helper()
	cols := append([]idsync.Column{}, tbl.Columns...)
	cols = append(cols,
		idsync.Column{Name: idsync.ColHash, Type: idsync.TypeText},
		idsync.Column{Name: idsync.ColSyncedAt, Type: idsync.TypeTimestamp})
	var sel, order []string
	for _, c := range cols {
		e := sink.QuoteIdent(c.Name)
		if b.name == "postgres" && (c.Type == idsync.TypeNumeric || c.Type == idsync.TypeJSON) {
			e += "::text"
		}
		sel = append(sel, e)
	}
	for _, k := range tbl.Key {
		order = append(order, sink.QuoteIdent(k))
	}
	q := fmt.Sprintf("SELECT %s FROM %s ORDER BY %s", strings.Join(sel, ", "), qname(tbl), strings.Join(order, ", "))
	var out []map[string]string
	for _, r := range b.rows(t, q) {
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
func canon(t *testing.T, typ idsync.ColumnType, v any) string {
	t.Helper()
	if v == nil {
		return "NULL"
	}
	switch typ {
	case idsync.TypeInteger:
		switch x := v.(type) {
		case int64:
			return strconv.FormatInt(x, 10)
		case int32:
			return strconv.FormatInt(int64(x), 10)
		case int:
			return strconv.Itoa(x)
		}
	case idsync.TypeReal:
		if f, ok := v.(float64); ok {
			return strconv.FormatFloat(f, 'g', -1, 64)
		}
	case idsync.TypeBoolean:
		switch x := v.(type) {
		case bool:
			return strconv.FormatBool(x)
		case int64:
			return strconv.FormatBool(x != 0)
		}
	case idsync.TypeTimestamp:
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
	case idsync.TypeJSON:
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

// row builds an engine row with a content hash of its values.
func row(vals ...any) idsync.Row {
	h := sha256.New()
	for _, v := range vals {
		fmt.Fprintf(h, "%T:%v\x00", v, v)
	}
	return idsync.Row{Values: vals, Hash: hex.EncodeToString(h.Sum(nil))}
}

// want renders rows the way read does, for comparison.
func want(t *testing.T, tbl *idsync.Table, rows ...idsync.Row) []map[string]string {
	t.Helper()
	var out []map[string]string
	for _, r := range rows {
		m := map[string]string{}
		for i, c := range tbl.Columns {
			m[c.Name] = canon(t, c.Type, r.Values[i])
		}
		m[idsync.ColHash] = r.Hash
		out = append(out, m)
	}
	return out
}

// assertRows compares read rows to want rows, ignoring synced-at.
func assertRows(t *testing.T, got, want []map[string]string) {
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

func mustPrepare(t *testing.T, s idsync.Sink, tbl *idsync.Table) {
	t.Helper()
	if err := s.Prepare(context.Background(), tbl); err != nil {
		t.Fatalf("prepare %s: %v (hint: %s)", tbl, err, idsync.Hint(err))
	}
}

func mustUpsert(t *testing.T, s idsync.Sink, tbl *idsync.Table, want idsync.Counts, rows ...idsync.Row) {
	t.Helper()
	got, err := s.Upsert(context.Background(), tbl, rows)
	if err != nil {
		t.Fatalf("upsert into %s: %v", tbl, err)
	}
	if got != want {
		t.Fatalf("upsert counts = %+v, want %+v", got, want)
	}
}

// syncedAt returns each row's synced-at value, in key order.
func syncedAt(t *testing.T, b *backend, tbl *idsync.Table) []string {
	t.Helper()
	var out []string
	for _, r := range b.read(t, tbl) {
		out = append(out, r[idsync.ColSyncedAt])
	}
	return out
}
