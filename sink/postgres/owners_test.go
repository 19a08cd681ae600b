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

// A user with no CREATE privilege on the schema (a table the DBA made,
// DML rights only) still writes with deletes: keep once the owners table
// exists (CREATE TABLE IF NOT EXISTS alone would need the privilege on
// every run); while it does not, the error says what to create and grant.
func TestPostgresOwnersWithoutCreatePrivilege(t *testing.T) {
	b := newPostgresBackend(t)
	role := "idemsync_nocreate_" + sinktest.RandomHex(4)
	q := sqlkit.QuoteIdent
	b.Exec(t, "CREATE ROLE "+q(role)+" LOGIN PASSWORD 'pw'")
	t.Cleanup(func() {
		b.Exec(t, "DROP OWNED BY "+q(role))
		b.Exec(t, "DROP ROLE "+q(role))
	})
	b.Exec(t, "GRANT USAGE ON SCHEMA "+q(b.Schema)+" TO "+q(role))
	u, err := url.Parse(postgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, "pw")
	s, err := postgres.OpenTarget(context.Background(), contract.Conn{URL: u.String()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tbl := sinktest.People(b)
	w := contract.Writer{Job: "orders", State: "/srv/state.db", Deletes: contract.DeletesKeep}
	err = s.ClaimTable(context.Background(), tbl, contract.TableClaim{Writer: w})
	if err == nil || !strings.Contains(contract.Hint(err), "GRANT SELECT, INSERT, UPDATE, DELETE ON "+q(b.Schema)+"."+q("_idemsync_owners")+" TO "+q(role)) {
		t.Fatalf("claim without the privilege: %v (hint %q); want a hint with the statements", err, contract.Hint(err))
	}
	// The DBA runs the hint's statements.
	hint := contract.Hint(err)
	b.Exec(t, hint[strings.Index(hint, "CREATE TABLE"):])
	if err := s.ClaimTable(context.Background(), tbl, contract.TableClaim{Writer: w}); err != nil {
		t.Fatalf("claim once the table exists: %v", err)
	}
}
