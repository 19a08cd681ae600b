package sqlkit_test

import (
	"database/sql"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/idemsync/idemsync/sink/sqlkit"
	_ "modernc.org/sqlite"
)

func TestQuoteIdent(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"orders", `"orders"`},
		{"Mixed Case", `"Mixed Case"`},
		{`we"ird`, `"we""ird"`},
		{`""`, `""""""`},
		{"ünï🙂", `"ünï🙂"`},
		{"select", `"select"`},
		{`x"; DROP TABLE t; --`, `"x""; DROP TABLE t; --"`},
	} {
		if got := sqlkit.QuoteIdent(tc.in); got != tc.want {
			t.Errorf("QuoteIdent(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// unquote reverses QuoteIdent, reporting false when q is not one well-formed
// quoted identifier (a lone quote inside would end it early).
func unquote(q string) (string, bool) {
	if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' {
		return "", false
	}
	inner := q[1 : len(q)-1]
	if strings.Count(strings.ReplaceAll(inner, `""`, ""), `"`) != 0 {
		return "", false
	}
	return strings.ReplaceAll(inner, `""`, `"`), true
}

// FuzzQuoteIdent checks that QuoteIdent always yields exactly one quoted
// identifier that stands for the input, and that SQLite creates a table and
// a column with exactly that name.
func FuzzQuoteIdent(f *testing.F) {
	for _, s := range []string{"a", `"`, `""`, `a"b`, "with space", "ünï🙂", "select", `x"; DROP TABLE t; --`, "'", "\\", "\n"} {
		f.Add(s)
	}
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		f.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	defer db.Close()
	f.Fuzz(func(t *testing.T, s string) {
		q := sqlkit.QuoteIdent(s)
		got, ok := unquote(q)
		if !ok || got != s {
			t.Fatalf("QuoteIdent(%q) = %s: unquotes to %q (ok %v)", s, q, got, ok)
		}
		if s == "" || strings.ContainsRune(s, 0) || !utf8.ValidString(s) {
			return // rejected by Prepare before reaching SQL
		}
		if _, err := db.Exec("CREATE TABLE " + q + " (" + q + " TEXT)"); err != nil {
			if strings.HasPrefix(strings.ToLower(s), "sqlite_") {
				return // reserved by SQLite itself
			}
			t.Fatalf("create table %s: %v", q, err)
		}
		defer db.Exec("DROP TABLE " + q)
		var name string
		if err := db.QueryRow("SELECT name FROM pragma_table_info(?)", s).Scan(&name); err != nil || name != s {
			t.Fatalf("column of table %s: %q, %v; want %q", q, name, err, s)
		}
	})
}
