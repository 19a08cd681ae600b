package pgstate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/idemsync/idemsync/contract"
	"github.com/jackc/pgx/v5"
)

// Two spellings of one schema name that differ only in case are two
// schemas to PostgreSQL (?schema= is quoted): a second host configured
// with ?schema=LEDGER beside a first one's ?schema=ledger would get a
// state and a ledger of its own, and both would acquire the same key, a
// double no status shows. A new schema's name is lower case, and a new
// state beside a schema whose name differs only in case is refused
// (docs/operations.md, "State in PostgreSQL").
func TestOpenSchemaCase(t *testing.T) {
	ctx := context.Background()
	base := testURL(t)
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	lower := "ledger2_case_" + hex.EncodeToString(b)
	mixed := "Ledger2_Case_" + hex.EncodeToString(b)
	upper := strings.ToUpper(lower)
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, s := range []string{lower, mixed, upper} {
			_, _ = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{s}.Sanitize()+" CASCADE")
		}
		conn.Close(ctx)
	})
	at := func(schema string) string {
		u, _ := url.Parse(base)
		q := u.Query()
		q.Set("schema", schema)
		u.RawQuery = q.Encode()
		return u.String()
	}
	schemas := func() []string {
		rows, _ := conn.Query(ctx, `SELECT nspname FROM pg_namespace WHERE lower(nspname) = $1 ORDER BY nspname`, lower)
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	claim := func(s *Store) string {
		out, err := s.Claim(ctx, []contract.ClaimRequest{{NS: "default", Key: "k1", TTL: time.Minute, Token: newToken()}})
		if err != nil {
			t.Fatal(err)
		}
		return out[0].Status
	}
	refused := func(schema, naming string) {
		t.Helper()
		s, err := Open(ctx, at(schema), testLogger(t))
		if err == nil {
			st := claim(s)
			s.Close()
			t.Fatalf("Open ?schema=%s beside %v: opened (a claim of the key held in the other: %s), want refused", schema, schemas(), st)
		}
		if contract.ClassOf(err) != contract.Invalid || !strings.Contains(err.Error(), `"`+naming+`"`) {
			t.Errorf("Open ?schema=%s: %v (class %v), want exit 2 naming %q", schema, err, contract.ClassOf(err), naming)
		}
	}

	// A new schema whose name is not lower case is refused, nothing created.
	refused(mixed, mixed)
	if got := schemas(); len(got) != 0 {
		t.Fatalf("schemas after a refused Open: %v, want none", got)
	}

	first := openTest(t, at(lower))
	if st := claim(first); st != contract.StatusAcquired {
		t.Fatalf("first claim: %s", st)
	}
	first.Close()
	refused(upper, lower)

	// A state made before this rule in a schema whose name has capitals
	// opens as it is; its lower-case spelling is refused, not a new state.
	if _, err := conn.Exec(ctx, "ALTER SCHEMA "+lower+" RENAME TO "+pgx.Identifier{mixed}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	old := openTest(t, at(mixed))
	if st := claim(old); st != contract.StatusInProgress {
		t.Errorf("claim through the existing %s: %s, want in_progress", mixed, st)
	}
	old.Close()
	refused(lower, mixed)
	if got := schemas(); len(got) != 1 || got[0] != mixed {
		t.Errorf("schemas: %v, want only %s", got, mixed)
	}
}
