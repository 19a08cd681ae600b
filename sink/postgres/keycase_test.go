package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/sinktest"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

// A key column PostgreSQL compares case-insensitively (a nondeterministic
// collation, or citext): two records of one page whose keys differ only by
// case are one row to the unique key, and the merge cannot write it twice.
// The page fails with an error naming the table and the key column and
// saying why, not the raw "cannot affect row a second time"; nothing of the
// page is written.
func TestKeyCaseInsensitiveNamesColumn(t *testing.T) {
	b := newPostgresBackend(t)
	ci := sqlkit.QuoteIdent(b.Schema) + ".ci"
	b.Exec(t, "CREATE COLLATION "+ci+" (provider = icu, locale = 'und-u-ks-level2', deterministic = false)")
	kinds := map[string]string{"collation": "text COLLATE " + ci}
	if got := b.Rows(t, "SELECT count(*) FROM pg_available_extensions WHERE name = 'citext'"); got[0][0] == int64(1) {
		b.Exec(t, "CREATE EXTENSION IF NOT EXISTS citext")
		kinds["citext"] = "citext"
	} else {
		t.Log("citext is not available on this server: only the collation is tried")
	}
	for kind, typ := range kinds {
		t.Run(kind, func(t *testing.T) {
			s := b.Sink(t)
			tbl := b.Table("people_"+kind, []string{"login"}, sinktest.Col("login", contract.TypeText), sinktest.Col("v", contract.TypeText))
			tbl.Create = false
			b.Exec(t, "CREATE TABLE "+sinktest.QName(tbl)+" (login text PRIMARY KEY, v text, _idemsync_hash text, _idemsync_synced_at timestamptz)")
			sinktest.MustPrepare(t, s, tbl)
			// Prepare refuses such a key (checkKeyCollation): the type comes by hand after it.
			b.Exec(t, "ALTER TABLE "+sinktest.QName(tbl)+" ALTER COLUMN login TYPE "+typ)
			_, err := s.Upsert(context.Background(), tbl, []contract.Row{sinktest.Row("Bob", "1"), sinktest.Row("Ann", "1"), sinktest.Row("BOB", "2")})
			var ie *contract.Error
			if !errors.As(err, &ie) || ie.Class != contract.Permanent {
				t.Fatalf("upsert: %v, want a permanent *contract.Error", err)
			}
			msg := err.Error()
			for _, w := range []string{tbl.String(), "key column login", "case"} {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %q", msg, w)
				}
			}
			if strings.Contains(msg, "cannot affect row a second time") {
				t.Errorf("error %q is the raw database error", msg)
			}
			if got := b.Rows(t, "SELECT count(*) FROM "+sinktest.QName(tbl)); got[0][0] != int64(0) {
				t.Errorf("rows written: %v, want none", got[0][0])
			}
		})
	}
}
