package postgres_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/idemsync/idemsync/contract"
	"github.com/idemsync/idemsync/sink/postgres"
	"github.com/idemsync/idemsync/sink/sinktest"
	"github.com/idemsync/idemsync/sink/sqlkit"
)

// A user with no CREATE privilege on the schema (the table made by the
// DBA, DML rights only) whose schema has no progress table yet gets, on
// its first page, an error whose hint holds the statements to create it
// and grant it, not a bare "relation does not exist"; once the DBA ran
// them, pages raise the marker (docs/guarantees.md, "Progress markers").
func TestPostgresProgressWithoutCreatePrivilege(t *testing.T) {
	b := newPostgresBackend(t)
	ctx := context.Background()
	role := "idemsync_nocreate_" + sinktest.RandomHex(4)
	q := sqlkit.QuoteIdent
	b.Exec(t, "CREATE ROLE "+q(role)+" LOGIN PASSWORD 'pw'")
	t.Cleanup(func() {
		b.Exec(t, "DROP OWNED BY "+q(role))
		b.Exec(t, "DROP ROLE "+q(role))
	})
	tbl := sinktest.People(b)
	admin, err := b.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if err := admin.Prepare(ctx, tbl); err != nil {
		t.Fatal(err)
	}
	b.Exec(t, "GRANT USAGE ON SCHEMA "+q(b.Schema)+" TO "+q(role))
	b.Exec(t, "GRANT SELECT, INSERT, UPDATE, DELETE ON "+sinktest.QName(tbl)+" TO "+q(role))
	u, err := url.Parse(postgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, "pw")
	s, err := postgres.OpenTarget(ctx, contract.Conn{URL: u.String()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Prepare(ctx, tbl); err != nil {
		t.Fatal(err)
	}
	rows := []contract.Row{sinktest.Row("1", "ann", 30)}
	tbl.Progress = contract.Progress{Job: "people", Value: 1}
	_, err = s.Upsert(ctx, tbl, rows)
	grant := "GRANT SELECT, INSERT, UPDATE ON " + q(b.Schema) + "." + q("_idemsync_progress") + " TO " + q(role)
	if err == nil || !strings.Contains(contract.Hint(err), grant) {
		t.Fatalf("a page without the privilege: %v (hint %q); want a hint with the statements", err, contract.Hint(err))
	}
	hint := contract.Hint(err)
	b.Exec(t, hint[strings.Index(hint, "CREATE TABLE"):])
	if _, err := s.Upsert(ctx, tbl, rows); err != nil {
		t.Fatalf("a page once the table exists: %v", err)
	}
	if v, kept, err := s.ReadProgress(ctx, tbl, "people"); err != nil || !kept || v != 1 {
		t.Fatalf("the marker: %d %v %v, want 1", v, kept, err)
	}
}
